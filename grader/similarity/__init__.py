"""The similarity report of issue 20: `python3 -m grader similarity OUT`.

normalise (tokens without names, aliases, comments, layout or the order of
independent statements) -> documents (each student's fenced code per lab,
the reference solutions, an instructor's corpus, the skeleton as
boilerplate) -> compare (copydetect's winnowing behind a fingerprint index)
-> analyse (one run over a class) -> report_html and command. Nothing here
reads or changes a grade. Only report_html is imported by the class report:
it needs no third-party package.
"""
