"""Where the flagtree package this test run imports lives: the checkout's src/ in the developer
loop (PYTHONPATH=src, the built _native copied in), site-packages after `pip install .` (CI). Child
processes that must import the same build put this folder on their path; the checkout's src/
alone has no _native after a plain install."""
import os

import flagtree.profiler

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(flagtree.profiler.__file__))))
