"""The async ``/search`` retriever (dense search blended with live document quality).

Not built yet: see issue 6. Nothing imports this package today.
"""
