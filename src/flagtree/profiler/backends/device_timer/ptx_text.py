"""What the PTX stamps (ptx_stamps.py: a ring slot's; ptx_graph_stamps.py: a graph replay's) are
built from: the native ring's layout and the pieces of PTX text both paths write."""

# The native ring's layout (timer_ring.h, graph_area.h, graph_tickets.h).
SLOT_BYTES = 16
SLOT_MARK = 1
GRAPH_TAG = 8
TICKET_BYTES = 16  # a ticket counter pair in a descriptor's header: {u64 entry tickets, u64 exits}
TICKET_COUNTERS = 1024  # counter pairs a descriptor's header holds
# Registers at the kernel's scope, from the entry stamp to the exit stamps of a graph replay:
# g0 thread 0's ~entry time, g1 the warp's entry ticket.
CARRIED = "%ftp_g"


def log2(power_of_two):
    return power_of_two.bit_length() - 1


def meta_store(address, kernel_id, r, p):
    """Block (0,0,0) stores {kernel id, grid x, grid y | grid z << 16, block x} at `address`;
    `r`: the prefix of eight u32 scratch registers (2-7 used), `p` a scratch predicate."""
    return (f"\tmov.u32 {r}2, %ctaid.x;\n\tmov.u32 {r}3, %ctaid.y;\n\tor.b32 {r}2, {r}2, {r}3;\n"
            f"\tmov.u32 {r}3, %ctaid.z;\n\tor.b32 {r}2, {r}2, {r}3;\n"
            f"\tsetp.eq.u32 {p}, {r}2, 0;\n"
            f"\tmov.u32 {r}4, %nctaid.x;\n\tmov.u32 {r}5, %nctaid.y;\n\tmov.u32 {r}6, %nctaid.z;\n"
            f"\tshl.b32 {r}6, {r}6, 16;\n\tor.b32 {r}5, {r}5, {r}6;\n"
            f"\tmov.u32 {r}6, %ntid.x;\n"
            f"\tmov.u32 {r}7, {kernel_id};\n"
            f"\t@{p} st.global.v4.u32 [{address}], {{{r}7, {r}4, {r}5, {r}6}};\n")
