from verdictflow.cli import main

if __name__ == "__main__":  # not when imported (a spawned multiprocessing child imports it)
    main()
