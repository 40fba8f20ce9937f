"""What a key written into an object's ``__dict__`` costs its later attribute reads: five reads of
an object shaped as Triton's CompiledKernel (attributes set in ``__init__``, ``run`` a property),
as made, with one more key written through ``__dict__`` (what a launch door that kept its choice
in the kernel did), and after that key is removed again. CPython keeps the attributes of
instances of a class in one shared-key table; a key the class's instances never set turns that
object's table into an ordinary dictionary for good, and the interpreter's specialised
attribute reads no longer apply to it (markedly on 3.12; 3.13 differs).

    python3.12 dev/probe_instance_dict.py"""
import sys
import time


class Kernel:
    def __init__(self):
        self.name, self.function, self.packed_metadata, self.metadata, self.src = "k", 1, 2, 3, 4
        self._run, self.module = None, None

    @property
    def run(self):
        return self._run


def five_reads_ns(kernel, n=2_000_000):
    began = time.perf_counter()
    for _ in range(n):
        kernel.name, kernel.function, kernel.packed_metadata, kernel.metadata, kernel.src
    return (time.perf_counter() - began) / n * 1e9


def main():
    made, written, removed = Kernel(), Kernel(), Kernel()
    written.__dict__["chosen"] = 1
    removed.__dict__["chosen"] = 1
    del removed.__dict__["chosen"]
    for _ in range(3):
        print(f"Python {sys.version.split()[0]}: five reads {five_reads_ns(made):.1f} ns as made, "
              f"{five_reads_ns(written):.1f} ns with a key written, {five_reads_ns(removed):.1f} ns after its removal")


if __name__ == "__main__":
    main()
