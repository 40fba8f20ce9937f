"""Run as a child process (a fresh import order): flagtree.profiler first, then torch inductor's
real Triton codegen module; its real get_kernel_metadata, called as inductor calls it, and the
wrapper text inductor's real kernel definition formatter writes give a kernel whose source lines
the registry finds. Prints the facts as JSON."""
import json
import os
import sys
import types

import flagtree.profiler  # noqa: F401 - installs the codegen hook before inductor loads
import torch
import torch._inductor.codegen.triton as codegen
from torch._inductor.codegen.wrapper import PythonWrapperCodegen
from torch.utils._ordered_set import OrderedSet

from flagtree.profiler.inductor import registry

# the model's line, then torch's own code it ran into (left out of the source lines)
TRACE = ('  File "/m/train.py", line 9, in main\n    y = model(x)\n  File "/m/model.py", line {}, in forward\n'
         f'    z\n  File "{os.path.dirname(torch.__file__)}/nn/modules/linear.py", line 125, in forward\n    F.linear\n')


def _node(graph, target, source, line):
    x = graph.placeholder(f"x_{source}")
    node = graph.call_function(target, (x, x))
    node.meta.update(original_aten=target, from_node=[types.SimpleNamespace(name=source)],
                     stack_trace=TRACE.format(line))
    return node


def main(wrapper_path):
    assert hasattr(codegen.get_kernel_metadata, "_flagtree_original"), "the codegen was not wrapped"
    # nodes of two graphs: inductor writes no graph fragment for them ("Unsorted")
    first, second = torch.fx.Graph(), torch.fx.Graph()
    nodes = [_node(first, torch.ops.aten.add.Tensor, "add_1", 12), _node(second, torch.ops.aten.mul.Tensor, "mul_1", 14)]
    schedule = [types.SimpleNamespace(node=types.SimpleNamespace(origins=OrderedSet([n]))) for n in nodes]
    origins, detailed = codegen.get_kernel_metadata(schedule, types.SimpleNamespace(comment="#"))
    metadata = f"# kernel path: /tmp/k.py\n{origins}\n{detailed}"
    body = PythonWrapperCodegen._format_kernel_definition(
        "triton_poi_fused_add_mul_0", "async_compile.triton('triton_poi_fused_add_mul_0', '''\n'''"
        ", device_str='cuda')", metadata)
    with open(wrapper_path, "w") as out:
        out.write(body)
    module = types.ModuleType("wrapper")
    module.__file__ = wrapper_path
    torch._inductor.codecache.PyCodeCache.modules.append(module)
    print(json.dumps(registry.kernel_facts()))


if __name__ == "__main__":
    main(sys.argv[1])
