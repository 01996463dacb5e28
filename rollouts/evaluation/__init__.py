"""Evaluation: the records file of a run (``records``), statistics and the identity check
(``summary``), compare (``compare``), the HTML report (``report``), dataset export
(``export``) and the servers under load (``load``)."""
