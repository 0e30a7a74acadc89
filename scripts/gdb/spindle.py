# gdb commands for spindle programs: list the fibers of every live runtime and
# backtrace a suspended one.
#
#   (gdb) source scripts/gdb/spindle.py      # or the installed
#                                             # share/spindle/gdb/spindle.py
#   (gdb) spindle fibers                      # every runtime, every fiber
#   (gdb) spindle bt 7                        # backtrace of fiber 7 (or by name)
#
# Both commands only read memory: no inferior function call, so `spindle
# fibers` works on a core file as well as on a live process. They need the
# program's DWARF (the release preset is RelWithDebInfo): the types of
# spindle::detail::Scheduler, Fiber, Node, Worker and IoRequest, and the
# variable spindle::detail::debug_schedulers (sched/src/core/scheduler.cpp).
#
# Where the data is (keep in step with the C++):
#   debug_schedulers -> Scheduler::debug_next -> ...   every live runtime
#   Scheduler::root -> Node::child_list_.head_ -> Node::siblings_.next   the tree
#   Scheduler::roster.workers_[i]->current_            the fiber each worker runs
#   Fiber::wake_word & 3                               ParkKind (sched/src/core/park_word.hpp)
#   Fiber::context->fctx_                              saved fcontext (context.hpp)
#
# `spindle bt` points the newest frame of the selected thread at the fiber's
# saved registers, runs `bt` and puts the registers back. The layout of the
# saved fcontext is Boost.Context's x86-64 SysV jump_fcontext (1.74):
#   +0x00 mxcsr, x87 cw  +0x08 r12  +0x10 r13  +0x18 r14  +0x20 r15
#   +0x28 rbx  +0x30 rbp  +0x38 rip   and rsp = fctx + 0x40 after the return.
# The saved rip is inside spindle_fiber_switch (fiber/src/context.cpp), whose
# CFI lets gdb unwind into the fiber's own frames. gdb cannot write registers
# on a core file; there `spindle bt` says so and prints a frame-pointer walk
# instead (spindle builds with -fno-omit-frame-pointer).

import gdb

_PARK_KINDS = {0: "none", 1: "interruptible", 2: "io", 3: "uninterruptible"}
_PARK_ABORTED = 4

# sched/src/observe/dump.cpp's op_name().
# spindle::detail::IoCode, in its order (sched/src/io/op.hpp).
_OP_NAMES = (
    "nop", "accept", "connect", "recv", "send", "sendmsg", "read", "write", "fsync",
    "openat", "statx", "mkdirat", "unlinkat", "renameat", "ftruncate", "poll", "sqe",
)

_MAX_INDENT = 16
_MAX_NODES = 1000000  # a bound on the walk, against a corrupted tree

# Registers restored by jump_fcontext, and their offsets in the saved fcontext.
_FCTX_REGS = (("r12", 0x08), ("r13", 0x10), ("r14", 0x18), ("r15", 0x20),
              ("rbx", 0x28), ("rbp", 0x30), ("rip", 0x38))
_FCTX_SIZE = 0x40
_SAVED_REGS = ("rip", "rsp", "rbp", "rbx", "r12", "r13", "r14", "r15")


class SpindleError(gdb.GdbError):
    pass


class _RegistersReadOnly(Exception):
    pass


# --- reading the inferior's data --------------------------------------------

def _type(name):
    try:
        return gdb.lookup_type(name)
    except gdb.error:
        raise SpindleError(
            "spindle: no debug info for %s: build with debug info "
            "(the release preset, RelWithDebInfo, has it)" % name)


def _schedulers_head():
    name = "spindle::detail::debug_schedulers"
    sym = None
    try:
        sym = gdb.lookup_global_symbol(name) or gdb.lookup_static_symbol(name)
    except (gdb.error, AttributeError):
        sym = None
    try:
        if sym is not None:
            return sym.value()
        return gdb.parse_and_eval("'%s'" % name)
    except gdb.error:
        raise SpindleError(
            "spindle: %s not found: this needs a spindle program built with "
            "debug info (DWARF), and a running process or a core file" % name)


_offsets = {}


def _find_field(t, name):
    """(byte offset, type) of field `name` in struct `t` or one of its bases."""
    for f in t.strip_typedefs().fields():
        if f.name == name and not f.is_base_class:
            return f.bitpos // 8, f.type
    for f in t.strip_typedefs().fields():
        if f.is_base_class:
            found = _find_field(f.type, name)
            if found is not None:
                return f.bitpos // 8 + found[0], found[1]
    return None


def _field(ptr, type_name, name):
    """Field `name` of the `type_name` object at address `ptr`.

    Computed from the field's offset instead of dereferencing a pointer to a
    polymorphic class: gdb then looks for the RTTI of the dynamic type, finds
    none for FiberImpl<lambda>, and warns on every access."""
    key = (type_name, name)
    found = _offsets.get(key)
    if found is None:
        found = _find_field(_type(type_name), name)
        if found is None:
            raise SpindleError("spindle: %s has no field %s: this script does not match "
                               "the program's spindle version" % (type_name, name))
        _offsets[key] = found
    offset, ftype = found
    return gdb.Value(_u64(ptr) + offset).cast(ftype.pointer()).dereference()


_NODE = "spindle::detail::Node"
_FIBER = "spindle::detail::Fiber"
_SCHED = "spindle::detail::Scheduler"
_WORKER = "spindle::detail::Worker"
_REMOTE = "spindle::detail::WorkerRemote"


def _u64(value):
    return int(value) & 0xFFFFFFFFFFFFFFFF


def _atomic(value):
    """The value of a std::atomic<T> (read as a plain T)."""
    t = value.type.strip_typedefs()
    try:
        inner = t.template_argument(0)
    except (gdb.error, RuntimeError):
        return value["_M_i"]
    return value.address.cast(inner.pointer()).dereference()


def _string(value):
    """A libstdc++ std::string, read without pretty-printers."""
    try:
        ptr = value["_M_dataplus"]["_M_p"]
        length = int(value["_M_string_length"])
    except gdb.error:
        return str(value)
    if length == 0:
        return ""
    length = min(length, 4096)
    data = gdb.selected_inferior().read_memory(int(ptr), length)
    return bytes(data).decode("utf-8", "replace")


def _c_string(value):
    if _u64(value) == 0:
        return None
    try:
        return value.string(errors="replace")
    except gdb.error:
        return "?"


def _optional(value):
    """The contained value of a libstdc++ std::optional, or None."""
    payload = value["_M_payload"]
    if not bool(payload["_M_engaged"]):
        return None
    return payload["_M_payload"]["_M_value"]


def _vector(value):
    impl = value["_M_impl"]
    start, finish = impl["_M_start"], impl["_M_finish"]
    n = int(finish - start)
    return [(start + i).dereference() for i in range(max(0, min(n, 4096)))]


_vtable_cache = {}


def _classify(node):
    """'fiber', 'blocking' or 'task' for the Node at `node`, by the symbol of its vtable.

    Not by gdb's dynamic_type: gdb finds no RTTI symbol for FiberImpl<lambda>
    and warns on every look-up."""
    vptr = _u64(gdb.Value(node).cast(_type("unsigned long").pointer()).dereference())
    kind = _vtable_cache.get(vptr)
    if kind is None:
        out = gdb.execute("info symbol %#x" % vptr, to_string=True)
        name = out.split(" + ")[0].split(" in section")[0].strip()
        if "FiberImpl<" in name or name.endswith("detail::Fiber"):
            kind = "fiber"
        elif "BlockingTask" in name:
            kind = "blocking"
        else:
            kind = "task"
        _vtable_cache[vptr] = kind
    return kind


def _children(node):
    child = _u64(_field(node, _NODE, "child_list_")["head_"])
    while child != 0:
        yield child
        child = _u64(_field(child, _NODE, "siblings_")["next"])


def _schedulers():
    """The address of every live Scheduler."""
    s = _u64(_schedulers_head())
    seen = set()
    while s != 0 and s not in seen:
        seen.add(s)
        yield s
        s = _u64(_field(s, _SCHED, "debug_next"))


def _dedicated(remote):
    return "Dedicated" in str(_field(remote, _REMOTE, "placement_"))


def _workers(sched):
    """(worker count, {fiber address: (worker index, dedicated?)}) of a Scheduler."""
    running = {}
    roster = _field(sched, _SCHED, "roster")
    # The roster holds each worker's WorkerRemote, a member of its Worker.
    remotes = [_u64(w) for w in _vector(roster["workers_"])]
    remote_offset = _find_field(_type(_WORKER), "remote_")[0]
    for r in remotes:
        if r == 0:
            continue
        current = _u64(_field(r - remote_offset, _WORKER, "current_"))
        if current:
            running[current] = (int(_field(r, _REMOTE, "index_")), _dedicated(r))
    return len(remotes), running


def _is_live():
    conn = getattr(gdb.selected_inferior(), "connection", None)
    return conn is not None and getattr(conn, "type", None) == "native"


def _now_ms():
    import time
    clock = getattr(time, "CLOCK_MONOTONIC_COARSE", time.CLOCK_MONOTONIC)
    return int(time.clock_gettime(clock) * 1000)


def _fiber_label(f):
    label = "fiber %d" % _u64(_field(f, _FIBER, "id"))
    name = _string(_field(f, _FIBER, "name"))
    if name:
        label += " '%s'" % name
    return label


def _fiber_state(f, running):
    if f in running:
        index, dedicated = running[f]
        return "running on %sworker %d" % ("dedicated " if dedicated else "", index)
    word = _u64(_atomic(_field(f, _FIBER, "wake_word")))
    kind = word & 3
    if kind == 0:
        return "ready" if bool(_field(f, _FIBER, "started")) else "pending (not started)"
    what = _c_string(_field(f, _FIBER, "waiting_on")) or "?"
    state = "parked (" + what
    request = _u64(_field(f, _FIBER, "io_request"))
    if kind == 2 and request != 0:
        try:
            op = _u64(_field(request, "spindle::detail::IoRequest", "op"))
            code = int(_field(op, "spindle::detail::IoOp", "code"))
            state += " " + (_OP_NAMES[code] if code < len(_OP_NAMES) else "op %d" % code)
        except gdb.error:
            pass
    return state + ")"


def _describe(node, running, now):
    kind = _classify(node)
    aborted = bool(_atomic(_field(node, _NODE, "aborted_")))
    if kind == "blocking":
        return "blocking task (spawn_blocking)" + (", aborted" if aborted else "")
    if kind != "fiber":
        return "task"
    line = _fiber_label(node) + ": " + _fiber_state(node, running)
    pinned = _u64(_field(node, _FIBER, "pinned"))
    if pinned != 0 and _dedicated(pinned):
        line += ", dedicated thread"
    if aborted:
        line += ", aborted"
    if now is not None:
        spawned = _u64(_field(node, _FIBER, "spawned_ms"))
        line += ", age %d ms" % (now - spawned if now >= spawned else 0)
    return line


def _walk(root):
    """(node address, depth) for every node under root, depth first, in the
    order of RuntimeHandle::dump()."""
    stack = [(root, 0)]
    seen = set()
    while stack and len(seen) < _MAX_NODES:
        node, depth = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        yield node, depth
        try:
            kids = list(_children(node))
        except gdb.MemoryError:
            kids = []
        for child in reversed(kids):
            stack.append((child, depth + 1))


def _find_fiber(key):
    """(Fiber address, Scheduler address) of the fiber with id or name `key`."""
    matches = []
    for sched in _schedulers():
        root = _u64(_field(sched, _SCHED, "root"))
        if root == 0:
            continue
        for node, _ in _walk(root):
            if _classify(node) != "fiber":
                continue
            if key.isdigit():
                hit = _u64(_field(node, _FIBER, "id")) == int(key)
            else:
                hit = _string(_field(node, _FIBER, "name")) == key
            if hit:
                matches.append((node, sched))
    if not matches:
        raise SpindleError("spindle: no live fiber with id or name '%s'" % key)
    if len(matches) > 1:
        ids = ", ".join(str(_u64(_field(f, _FIBER, "id"))) for f, _ in matches)
        raise SpindleError("spindle: several fibers match '%s' (ids %s): use an id" % (key, ids))
    return matches[0]


# --- commands -----------------------------------------------------------------

class SpindlePrefix(gdb.Command):
    """spindle runtime commands: `spindle fibers`, `spindle bt ID|NAME`."""

    def __init__(self):
        super().__init__("spindle", gdb.COMMAND_DATA, gdb.COMPLETE_COMMAND, prefix=True)


class SpindleFibers(gdb.Command):
    """List every fiber of every live spindle runtime.

Usage: spindle fibers

One line per task, indented by the supervision tree: id, name, state
(running on worker N, ready, pending (not started), parked (what it waits
for)), and age when debugging a live process. Reads memory only, so it
also works on a core file. Needs the program's debug info."""

    def __init__(self):
        super().__init__("spindle fibers", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        try:
            schedulers = list(_schedulers())
        except gdb.MemoryError as e:
            raise SpindleError("spindle: cannot read memory (%s): is there a process "
                               "or a core file?" % e)
        if not schedulers:
            gdb.write("spindle: no live runtime\n")
            return
        now = _now_ms() if _is_live() else None
        for sched in schedulers:
            nworkers, running = _workers(sched)
            root = _u64(_field(sched, _SCHED, "root"))
            lines = []
            if root != 0:
                for node, depth in _walk(root):
                    try:
                        text = _describe(node, running, now)
                    except gdb.MemoryError:
                        text = "(unreadable node at %#x)" % node
                    lines.append("%s%s" % ("  " * min(depth, _MAX_INDENT), text))
            gdb.write("spindle: runtime %#x, %d workers: %d live tasks\n"
                      % (sched, nworkers, len(lines)))
            for line in lines:
                gdb.write(line + "\n")


class SpindleBt(gdb.Command):
    """Backtrace of a suspended spindle fiber.

Usage: spindle bt [-fp] ID|NAME [BT-ARGS]

The fiber must be suspended (ready or parked). On a live process the
selected thread's registers are pointed at the fiber's saved context for
the length of one `bt` (with BT-ARGS, e.g. `full` or `10`) and then put
back. gdb cannot write registers on a core file: there (and with -fp) it
prints a frame-pointer walk from the saved context instead."""

    def __init__(self):
        super().__init__("spindle bt", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        args = gdb.string_to_argv(arg)
        walk_only = bool(args) and args[0] == "-fp"
        if walk_only:
            args = args[1:]
        if not args:
            raise SpindleError("usage: spindle bt [-fp] ID|NAME [BT-ARGS]")
        f, sched = _find_fiber(args[0])
        label = _fiber_label(f)
        _, running = _workers(sched)
        if f in running:
            raise SpindleError("spindle: %s is %s: select that worker's thread and use bt"
                               % (label, _fiber_state(f, running)))
        if not bool(_field(f, _FIBER, "started")):
            raise SpindleError("spindle: %s has not started: it has no stack yet" % label)
        ctx = _optional(_field(f, _FIBER, "context"))
        fctx = _u64(ctx["fctx_"]) if ctx is not None else 0
        if fctx == 0:
            raise SpindleError("spindle: %s has no saved context (it is switching)" % label)

        regs = self._saved_registers(fctx)
        gdb.write("%s: %s\n" % (label, _fiber_state(f, running)))
        if regs["rip"] == 0:
            raise SpindleError(
                "spindle: the saved context of %s at %#x reads as zeros: its stack is not in "
                "this core file (gcore cannot read stack slabs with MADV_GUARD_INSTALL guard "
                "pages)" % (label, fctx))
        if walk_only:
            self._frame_pointer_walk(regs)
            return
        try:
            self._bt_with(regs, " ".join(args[1:]))
        except _RegistersReadOnly as e:
            gdb.write("spindle: gdb cannot write registers here (%s): a core file has no "
                      "registers to set, so `bt` cannot start from the fiber's context. "
                      "Frame-pointer walk from its saved context instead (no inlined frames, "
                      "no arguments):\n" % e)
            self._frame_pointer_walk(regs)

    @staticmethod
    def _saved_registers(fctx):
        ulong_p = _type("unsigned long").pointer()
        base = gdb.Value(fctx).cast(ulong_p)
        regs = {name: _u64((base + off // 8).dereference()) for name, off in _FCTX_REGS}
        regs["rsp"] = fctx + _FCTX_SIZE
        return regs

    @staticmethod
    def _bt_with(regs, bt_args):
        selected_level = gdb.selected_frame().level()
        newest = gdb.newest_frame()
        saved = {r: _u64(newest.read_register(r)) for r in _SAVED_REGS}
        newest.select()
        written = []
        try:
            for r in _SAVED_REGS:
                try:
                    gdb.execute("set $%s = %#x" % (r, regs[r]), to_string=True)
                except gdb.error as e:
                    raise _RegistersReadOnly(str(e))
                written.append(r)
            gdb.execute("bt " + bt_args if bt_args else "bt")
        finally:
            gdb.newest_frame().select()
            for r in reversed(written):
                gdb.execute("set $%s = %#x" % (r, saved[r]), to_string=True)
            try:
                gdb.execute("frame %d" % selected_level, to_string=True)
            except gdb.error:
                pass

    @staticmethod
    def _frame_pointer_walk(regs):
        ulong_p = _type("unsigned long").pointer()

        def word(addr):
            return _u64(gdb.Value(addr).cast(ulong_p).dereference())

        pcs = [regs["rip"]]
        # spindle_fiber_switch (no frame of its own) holds a 24-byte Hop below
        # the return address of switch_context's caller.
        sym = gdb.execute("info symbol %#x" % regs["rip"], to_string=True)
        if sym.startswith("spindle_fiber_switch"):
            pcs.append(word(regs["rsp"] + 24))
        rbp = regs["rbp"]
        for _ in range(64):
            if rbp == 0 or rbp % 8:
                break
            try:
                ret, next_rbp = word(rbp + 8), word(rbp)
            except gdb.MemoryError:
                break
            if ret == 0:
                break
            pcs.append(ret)
            if next_rbp <= rbp:
                break
            rbp = next_rbp
        for i, pc in enumerate(pcs):
            lookup = pc if i == 0 else pc - 1  # a return address is past the call
            where = gdb.execute("info symbol %#x" % lookup, to_string=True).strip()
            where = where.split(" in section")[0]
            sal = gdb.find_pc_line(lookup)
            if sal.symtab is not None:
                where += " at %s:%d" % (sal.symtab.filename, sal.line)
            gdb.write("#%-2d %#018x %s\n" % (i, pc, where))


def _clear_caches(_event=None):
    """Vtable addresses and field offsets belong to one program and one run."""
    _vtable_cache.clear()
    _offsets.clear()


gdb.events.new_objfile.connect(_clear_caches)
gdb.events.exited.connect(_clear_caches)

SpindlePrefix()
SpindleFibers()
SpindleBt()
