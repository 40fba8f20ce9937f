"""``Profile.top(by="kernel")``: kernels summed by name over every calling context, the
aggregation of the HTML report's "Top kernels" table and of Nsight Systems' kernel summary;
``by="node"`` ranks single nodes (one calling context each). A kernel under another kernel (a
device scope) is counted with the kernel above it, as in the report.
"""
import re

# Derived columns whose values add up over nodes (times and shares); a rate, a mean or util
# does not, so top(by="kernel") leaves it out.
_ADDITIVE = re.compile(r"^(time|cpu_time)(/(s|ms|us|ns|%))?$")


def additive(profile, metric):
    return metric in profile.stored_metrics or bool(_ADDITIVE.match(metric))


def outer_kernels(root):
    """Kernel nodes not under another kernel (a walk that stops at each kernel)."""
    found, stack = [], list(root.children.values())
    while stack:
        node = stack.pop()
        if node.kernel:
            found.append(node)
        else:
            stack.extend(node.children.values())
    return found


def kernel_sums(profile, metric, views_of):
    """(columns, {kernel name: [calling contexts, sum per column]}) over the outer kernels;
    `views_of(node)` gives the node's NodeView."""
    if not additive(profile, metric):
        raise ValueError(f"top(by='kernel') sums {metric!r} over each kernel's calling contexts; only "
                         f"times, shares (time/%) and stored metrics add up: use by='node' for it")
    shown = [metric] + [m for m in profile.metrics if m != metric and additive(profile, m)]
    if "count" in profile.stored_metrics and "count" not in shown:
        shown.append("count")
    sums = {}
    for node in outer_kernels(profile._tree.root):
        view = views_of(node)
        row = sums.setdefault(node.name, [0] + [None] * len(shown))
        row[0] += 1
        for at, spec in enumerate(shown, start=1):
            value = view.value(spec)
            if value is not None:
                row[at] = value if row[at] is None else row[at] + value
    return shown, sums


def top_by_kernel(profile, n, metric, views_of, pd):
    """The DataFrame of the ``n`` kernels with the largest summed ``metric``, indexed by name."""
    shown, sums = kernel_sums(profile, metric, views_of)
    key = lambda item: (-(item[1][1] if item[1][1] is not None else float("-inf")), item[0])
    best = sorted(sums.items(), key=key)[:max(0, int(n))]
    data = {"contexts": [row[0] for _, row in best]}
    for at, spec in enumerate(shown, start=1):
        data[spec] = [float("nan") if row[at] is None else float(row[at]) for _, row in best]
    return pd.DataFrame(data, index=pd.Index([name for name, _ in best], name="kernel"))
