"""backend="mthreads" (Moore Threads, MUPTI): the backend (backend.py).

Nothing is imported here, so a session on another backend does not import this one.
"""
