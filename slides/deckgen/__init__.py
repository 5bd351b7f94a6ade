"""make_figures.py's parts, one job each:

view.py            the evidence (grader.infra.evidence) and the course file, as the decks show them
tables.py          the results blocks between a deck's markers, and the splice
float_sum.py       lab 11's tables: four methods, accuracy, the sort-first study
floor.py           each reference's time over the floor of a call, and whether the floor held
canvas.py          what every figure shares (matplotlib, saving, cells)
measured.py        the plots of measured numbers
index_math.py      the kernels' index arithmetic the diagrams are drawn from
diagrams_trees.py  diagrams of the first labs (trees, warps, banks)
diagrams_loads.py  diagrams of labs 05-10 (who loads what, launches, shuffles)
figures.py         every figure in one pass
"""

import sys
from pathlib import Path

SLIDES = Path(__file__).resolve().parents[1]
REPO = SLIDES.parent
if str(REPO) not in sys.path:  # run as a script from anywhere: the grader is a sibling
    sys.path.insert(0, str(REPO))
