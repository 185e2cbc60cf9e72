from verdictflow.cli import main

main()
