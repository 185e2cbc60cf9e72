"""One article and two summaries of it, shared by the summary-faithfulness tests."""

ARTICLE = (
    "The city council of Paris approved a new budget of 5 million euros on Monday after a "
    "long debate. Mayor Anne Hidalgo said the money will fund three new schools in the north "
    "of the city. Construction is expected to begin in the spring of next year."
)
#: "Lyon": a name the article never mentions, where it says Paris.
FABRICATED = "The city council of Lyon approved a new budget of 5 million euros on Monday."
FAITHFUL = "The city council of Paris approved a new budget of 5 million euros on Monday."
