"""The generalist base world: procedurally generated apps (issue 56).

Each training episode draws a domain (``domains``), a fresh harness around it
(``app``: identifiers from ``idents``, texts from ``texts``), a user message
(``episode``), plays the scripted teacher through the real agent loop
(``teacher``, ``world``) and is judged by its own judge (``judge``).
"""
