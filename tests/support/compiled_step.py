"""The torch.compile step the GPU tests of CUDA-graph replays run in a child process: the start of
its script (imports, the step, its inputs), to which each test adds what it does with it."""

PRELUDE = '''
import sys, torch
import flagtree.profiler as p

def make():
    def step(x, y):
        a = torch.sin(x) * y + 1.0
        return a.sum(dim=-1), torch.relu(a).cos()
    return step

x = torch.rand(64, 1024, device="cuda"); y = torch.rand_like(x)
'''

# Its end: 100 replays of the reduce-overhead graphs (`graphed`) in the session `sid`, written.
REPLAYS = '''with p.scope("replays"):
    for _ in range(100):
        torch.compiler.cudagraph_mark_step_begin()
        out = graphed(x, y)
torch.cuda.synchronize()
p.finalize(sid)
'''
