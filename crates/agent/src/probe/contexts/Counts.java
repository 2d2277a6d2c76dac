package ferrofluid;

import jdk.internal.vm.annotation.DontInline;
import jdk.internal.vm.annotation.ForceInline;

/**
 * Calling contexts kept in Java (JP's design), for the {@code count} engine and {@code cpu} mode's
 * sampled timing: the probes of the counted methods call {@link #enterContext} at entry and {@link #exitContext} (or
 * {@link #unwindContext}) with the bytecodes their block counters summed at exit. Each thread
 * (each virtual thread) has a context, found by its {@code Thread}'s id in a table
 * (else through a {@code ThreadLocal}): a calling-context tree in primitive arrays (method,
 * parent, both as one key, calls, bytecodes per node), a hash table from (parent, method) to child, a cache of
 * the children last entered, and the current node. An entry moves the current node to the
 * child for the method, an exit adds the bytecodes and moves back to the parent: no JNI call,
 * nothing the JIT cannot inline, no allocation but a new context's node.
 *
 * <p>A method that calls nothing may carry {@link #leafContext} (or {@link #leafBlocks}) alone,
 * which counts its call without entering its node.
 *
 * <p>The agent is called only where it must decide: a root's entry and exit (a negative id:
 * the root depth, the extent of the roots and when a thread records are the agent's, as in
 * the {@code cpu} mode), and the first entry of each method (lazy revelation), after which
 * {@code ready[id]} answers here. Its answers say whether to count the probe and whether the
 * thread records from then on. While no thread is inside a root, {@code Hooks.active} is 0
 * and a non-root probe returns at once. With no root ({@code all}) every thread counts.
 *
 * <p>The agent defines this class in the bootstrap loader, starts a recording with
 * {@link #reset}, ends it with {@link #stop} and reads it with {@link #contexts}, which
 * copies each context's arrays; {@link #sample} reads each thread's current node for the
 * sampler of sampled timing. Memory is
 * bounded: past {@code maxNodes} nodes in a context, or the nodes all contexts may have (a
 * share of the heap), new calling contexts count in one overflow node per context; past
 * {@link #MAX_CONTEXTS} contexts, new threads do not count and are counted instead. The
 * classes this code runs ({@code ThreadLocal} and its map, {@code java.lang.ref.Reference})
 * must not carry these probes (the engine's plan excludes them). Compiled by {@code javac
 * -source 11 -target 11 --add-exports java.base/jdk.internal.vm.annotation=ALL-UNNAMED
 * --add-exports java.base/jdk.internal.misc=ALL-UNNAMED} (for {@code @DontInline} and
 * {@code @ForceInline}, which HotSpot honours in classes of the bootstrap loader, and the
 * {@code Unsafe} that reads thread ids) with tools/hooks/ferrofluid/Hooks.java into
 * Counts.class next to this file (checked by a test). The probes' fast paths are {@code @ForceInline}: C2 counts a forced
 * method as one bytecode against a compilation's inlining budget, so the probes inlined into
 * each probed method do not use up the budget for inlining the application's own methods.
 */
public final class Counts {
    private Counts() {
    }

    /** The method of a tree's root and of the overflow node. */
    static final int ROOT = -1;
    static final int OVERFLOW = -2;
    /** Contexts a recording may have; past it, new threads do not count. */
    static final int MAX_CONTEXTS = 1 << 16;
    /** Method ids from here on are never marked ready (their entries always ask the agent). */
    static final int MAX_METHODS = 1 << 22;

    /** Answers of the agent's natives (bits). */
    static final int RECORD = 1;
    static final int RECORDING = 2;
    static final int READY = 4;
    static final int VIRTUAL = 8;

    /** The recording contexts belong to; 0: nothing counts. */
    private static volatile int epoch;
    /** The last recording's number: recordings are numbered on across stops and sessions. */
    private static int lastEpoch;
    /**
     * The agent's session the recordings belong to: method ids mean the same only within one,
     * so calls open in a context of another session are neither reopened nor closed.
     */
    private static int session;
    /** No root: every thread counts, and the agent is asked only at first entries. */
    private static volatile boolean all;
    /** {@code ready[id] != 0}: the agent counts method {@code id}'s entries here from now on. */
    private static volatile byte[] ready = new byte[0];
    private static int maxNodes = 1 << 20;
    /** Nodes all contexts may still make; then new calling contexts overflow. */
    private static long nodesLeft;
    /** Threads that did not count: {@link #MAX_CONTEXTS} was reached. */
    private static long droppedThreads;

    private static final ThreadLocal<Context> CONTEXT = new ThreadLocal<>();
    /**
     * How the probes read a {@code Thread}'s id ({@link #slot}): the offset of its {@code tid}
     * field, or -1 where {@code jdk.internal.misc} is not exported to this class (the agent
     * exports it as it defines the class) or the field is not there.
     */
    private static final jdk.internal.misc.Unsafe UNSAFE;
    private static final long TID;
    /** 1 where the probes find threads by id (the agent logs which way they do). */
    private static final int BY_ID;

    static {
        jdk.internal.misc.Unsafe u = null;
        long tid = -1;
        try {
            u = jdk.internal.misc.Unsafe.getUnsafe();
            tid = u.objectFieldOffset(Thread.class, "tid");
        } catch (Throwable e) {
            // IllegalAccessError (not exported here), InternalError (no such field).
            tid = -1;
        }
        UNSAFE = u;
        TID = tid;
        BY_ID = tid >= 0 ? 1 : 0;
    }

    /**
     * The probes' way to a thread's context: by its {@code Thread}'s {@link #slot} (a
     * cache: a slot holds the context that counted there last; a miss goes to {@link #CONTEXT}).
     * Cleared when a recording starts or ends.
     */
    private static final int SLOTS = 1 << 12;
    private static final Context[] BY_THREAD = new Context[SLOTS];
    /** The context of a thread running the agent's calls here, which does not count. */
    private static final Context IGNORED = new Context(null, 0, false, 0);
    private static final Object LOCK = new Object();
    /** Every context of the recording, in the order threads first counted. */
    private static Context[] contexts = new Context[16];
    private static int contextCount;
    /** The context of each thread that has one in the recording. */
    private static java.util.IdentityHashMap<Thread, Context> byThread =
        new java.util.IdentityHashMap<>();

    /**
     * Method {@code id} (a root: {@code ~id}) was entered: returns the context its exit hands
     * back, or null if the entry did not count. Inlined into every probed method: the common
     * case (the thread's context found in {@link #BY_THREAD}, the child found in its
     * {@link Context#hot} cache) counts here; everything else is {@link #entered}'s, out of line.
     */
    @ForceInline
    public static Object enterContext(int id) {
        if (id >= 0) {
            if (Hooks.active == 0) {
                return null;
            }
            Context c = published();
            if (c != null) {
                if (c.recording == 0) {
                    return null;
                }
                int p = c.current;
                int n = cachedChild(c, p, id);
                if (n != 0) {
                    c.calls[n]++;
                    c.saved = p;
                    c.current = n;
                    return c;
                }
            }
        }
        return entered(id);
    }

    /**
     * The calling thread's context, if {@link #publish} made it findable: the probes' fast way
     * to it. Inlined into each of them, which return at once if it does not record (a thread
     * outside the root invocations being recorded, while another thread records).
     */
    @ForceInline
    private static Context published() {
        Thread t = Thread.currentThread();
        Context c = BY_THREAD[slot(t)];
        return c != null && c.thread == t && c.epoch == epoch ? c : null;
    }

    /**
     * The child of node {@code p} for {@code id} if {@code c}'s cache holds it, else 0. The root
     * (0) is nobody's child, and a child is cached only once its method is ready: a match is a
     * counted entry. One key compares parent and method: one load fewer on the way from one
     * call's node to the next.
     */
    @ForceInline
    private static int cachedChild(Context c, int p, int id) {
        int[] h = c.hot;
        int n = h[hash(p, id) & (h.length - 1)];
        return c.key[n] == key(p, id) ? n : 0;
    }

    /**
     * Not inlined: the JIT compiles the rare cases once instead of into every probed method
     * (decision 0051).
     */
    @DontInline
    private static Object entered(int id) {
        if (id < 0) {
            return rootEntered(id);
        }
        Context c = CONTEXT.get();
        if (c == null || c.epoch != epoch) {
            c = renew(c);
            if (c == null) {
                return null;
            }
        }
        if (c.recording == 0) {
            return null;
        }
        byte[] r = ready;
        boolean isReady = id < r.length && r[id] != 0;
        if (!isReady) {
            if (!firstEntry(c, id)) {
                return null;
            }
            r = ready;
            isReady = id < r.length && r[id] != 0;
        }
        c.enter(id, isReady);
        publish(c);
        return c;
    }

    /**
     * Thread {@code t}'s slot in {@link #BY_THREAD}: by its id, read as a field (no call the
     * probes could reach, no dependence on the thread object's header), else by its identity
     * hash. Thread ids are consecutive, so threads alive together rarely share a slot; the
     * identity hash of a {@code Thread} whose monitor is inflated (while another thread joins
     * it) is a call into the VM at every probe.
     */
    @ForceInline
    private static int slot(Thread t) {
        long tid = TID;
        return (tid >= 0 ? (int) UNSAFE.getLong(t, tid) : System.identityHashCode(t)) & (SLOTS - 1);
    }

    /** A node's parent and method in one value ({@link Context#key}). */
    @ForceInline
    static long key(int parent, int id) {
        return (long) parent << 32 | (id & 0xFFFFFFFFL);
    }

    @ForceInline
    static int hash(int parent, int id) {
        int h = parent * 0x9E3779B9 + id;
        return h ^ (h >>> 16);
    }

    /**
     * Leaf method {@code id} (it calls nothing: its only probe) was entered: counts the call in
     * the child of the current node for it without moving there, since nothing can be entered
     * from it and its exit would move straight back. The calls count as {@link #enterContext}
     * counts them; the leaf's time is its caller's. Inlined as {@link #enterContext}.
     */
    @ForceInline
    public static void leafContext(int id) {
        if (Hooks.active == 0) {
            return;
        }
        Context c = published();
        if (c != null) {
            if (c.recording == 0) {
                return;
            }
            int n = cachedChild(c, c.current, id);
            if (n != 0) {
                c.calls[n]++;
                return;
            }
        }
        leafEntered(id, 0);
    }

    /**
     * {@link #leafContext} under block counting: each call of leaf method {@code id} (one basic
     * block) counts {@code bytecodes}.
     */
    @ForceInline
    public static void leafBlocks(int id, int bytecodes) {
        if (Hooks.active == 0) {
            return;
        }
        Context c = published();
        if (c != null) {
            if (c.recording == 0) {
                return;
            }
            int n = cachedChild(c, c.current, id);
            if (n != 0) {
                c.calls[n]++;
                c.bytecodes[n] += bytecodes & 0xFFFFFFFFL;
                return;
            }
        }
        leafEntered(id, bytecodes);
    }

    /** Not inlined, as {@link #entered}: the leaf's entry, then its exit. */
    @DontInline
    private static void leafEntered(int id, int bytecodes) {
        Object context = entered(id);
        if (context != null) {
            ((Context) context).exit(id, bytecodes);
        }
    }

    /** Makes {@code c} (counting, of the current recording) what {@link #enterContext} finds. */
    private static void publish(Context c) {
        int slot = slot(c.thread);
        if (BY_THREAD[slot] != c && c.epoch == epoch) {
            BY_THREAD[slot] = c;
            // A recording that ended meanwhile may have cleared the table before this store.
            if (c.epoch != epoch) {
                BY_THREAD[slot] = null;
            }
        }
    }

    /**
     * Right after an entry that returned {@code context}: the node its exits return to (the
     * caller's), which the frame keeps in a local and hands to {@link #exitContext}. Inlined
     * after {@link #enterContext}, the JIT has it from the entry's store: the node the entry
     * started from, so that an exit's store does not wait for the entry's lookups (each call's
     * entry reads the node the previous exit stored).
     */
    @ForceInline
    public static int savedContext(Object context) {
        if (context == null) {
            return 0;
        }
        return ((Context) context).saved;
    }

    /**
     * Method {@code id} returns after executing {@code bytecodes} of its own; {@code context}
     * is what its entry returned and {@code saved} what {@link #savedContext} did. Inlined: the
     * common case goes back to the saved node with one store, no load on the way (the next
     * call's entry reads it). With no bytecodes to add (sampled timing) it reads no node: an
     * entry that counted in this recording, outside the overflow node, moved the thread from
     * {@code saved}, and every probed frame entered since moved it back at its exit (returning
     * or throwing), so the thread is in the method's node. With bytecodes (block counting) the
     * node must be the method's to take them.
     */
    @ForceInline
    public static void exitContext(Object context, int id, int bytecodes, int saved) {
        if (context != null) {
            Context c = (Context) context;
            if (id >= 0 && bytecodes == 0 && c.overflowDepth == 0 && c.epoch == epoch) {
                c.current = saved;
                return;
            }
            int x = c.current;
            // A root's node has the method ~id: its exit asks the agent.
            if (c.method[x] == id && c.epoch == epoch) {
                // The counter is an int local: an unsigned reading postpones a wrap to 2^32.
                c.bytecodes[x] += bytecodes & 0xFFFFFFFFL;
                c.current = saved;
                return;
            }
            left(context, id, bytecodes);
        } else if (id < 0) {
            left(null, id, bytecodes);
        }
    }

    /** Not inlined, as {@link #entered}. */
    @DontInline
    private static void left(Object context, int id, int bytecodes) {
        if (id < 0) {
            rootLeft(context, id, bytecodes);
        } else {
            exit((Context) context, id, bytecodes);
        }
    }

    /**
     * Method {@code id} exits by an exception, as {@link #exitContext}; not inlined, so that the
     * handler every probed method has stays a call in compiled code.
     */
    @DontInline
    public static void unwindContext(Object context, int id, int bytecodes, int saved) {
        exitContext(context, id, bytecodes, saved);
    }

    private static void exit(Context c, int id, int bytecodes) {
        if (c.epoch != epoch) {
            c = current(c);
            if (c == null) {
                return;
            }
        }
        c.exit(id, bytecodes);
    }

    /**
     * The context an exit entered in {@code old}, an earlier recording's, closes its frame in:
     * the thread's context of this recording (which reopened the frame), else {@code old}
     * itself (the frame is still open there, for the next context to reopen); null once
     * nothing counts.
     */
    private static Context current(Context old) {
        if (epoch == 0 || old.session != session) {
            return null;
        }
        Context now = CONTEXT.get();
        return now != null && now != IGNORED && now.epoch == epoch ? now : old;
    }

    /** A virtual call at receiver site {@code site} is about to be made on {@code o}. */
    public static void receiver(Object o, int site) {
        Hooks.receiver(o, site);
    }

    /** The call(s) of deferred site {@code site} are about to be made. */
    public static void site(int site) {
        Hooks.site(site);
    }

    /** Gateway {@code kind} is entered with {@code target}. */
    public static void reveal(Object target, int kind) {
        Hooks.reveal(target, kind);
    }

    /** Root {@code ~id} is entered: the agent says whether it counts and the thread records. */
    private static Object rootEntered(int id) {
        Context c = context();
        if (c == null || c.busy) {
            enter0(id);
            return null;
        }
        // Probes the agent's work reaches on this thread (revelation) do not count.
        c.recording = 0;
        c.busy = true;
        int r = enter0(id);
        c.busy = false;
        c.recording = r & c.records;
        if ((r & RECORD) == 0) {
            return null;
        }
        c.enter(~id, false);
        return c;
    }

    /** Root {@code ~id} exits; {@code context} is what its entry returned. */
    private static void rootLeft(Object context, int id, int bytecodes) {
        int r = exit0(id);
        if (context != null && (r & RECORD) != 0) {
            exit((Context) context, ~id, bytecodes);
        }
        Context c = CONTEXT.get();
        if (c != null && c != IGNORED && !c.busy && c.epoch == epoch) {
            c.recording = r & c.records;
        }
    }

    /** The first entry of {@code id} since the recording began: the agent decides. */
    private static boolean firstEntry(Context c, int id) {
        c.recording = 0;
        c.busy = true;
        int r = first0(id);
        if ((r & READY) != 0) {
            markReady(id);
        }
        c.busy = false;
        c.agentCalls++;
        c.recording = (all ? RECORDING : r) & c.records;
        return (r & RECORD) != 0;
    }

    private static void markReady(int id) {
        if (id >= MAX_METHODS) {
            return;
        }
        byte[] r = ready;
        if (id >= r.length) {
            synchronized (LOCK) {
                r = ready;
                if (id >= r.length) {
                    // Room for half as many ids again: one copy per doubling, not per method.
                    int n = Math.max(2 * r.length, id + 1 + (id >> 1));
                    r = java.util.Arrays.copyOf(r, Math.max(id + 1, Math.min(MAX_METHODS, n)));
                    ready = r;
                }
            }
        }
        // A mark lost to a concurrent copy only sends that method's next entry to the agent.
        r[id] = 1;
    }

    /** The thread's context of the current recording, made if needed; null if it does not count. */
    private static Context context() {
        Context c = CONTEXT.get();
        if (c == null || c.epoch != epoch) {
            c = renew(c);
        }
        return c;
    }

    /**
     * A context for this thread in the current recording, with the calling contexts open in
     * {@code old} (an earlier recording's) and no counts; null if nothing counts. A thread past
     * {@link #MAX_CONTEXTS} gets one that does not record.
     */
    private static Context renew(Context old) {
        int e = epoch;
        if (e == 0 || old == IGNORED) {
            return null;
        }
        // The Java code below has probes too: they must not come back here.
        CONTEXT.set(IGNORED);
        Context c = null;
        try {
            c = make(old, e);
        } finally {
            try {
                CONTEXT.set(c != null ? c : old);
            } catch (Throwable x) {
                // A thread that may not have thread locals counts nothing.
            }
        }
        return c;
    }

    private static Context make(Context old, int e) {
        Thread t = Thread.currentThread();
        if (old == null) {
            // Its thread locals were erased (`Thread`'s own constructor, `InnocuousThread`
            // after each task): the thread goes on in the context it had.
            synchronized (LOCK) {
                Context had = byThread.get(t);
                if (had != null && had.epoch == e) {
                    return had;
                }
            }
        }
        boolean virtual = old != null ? old.virtual : isVirtual(t);
        int recording;
        if (all) {
            recording = RECORDING;
        } else {
            int s = state0();
            recording = s & RECORDING;
            virtual = (s & VIRTUAL) != 0;
        }
        Context c = new Context(t, e, virtual, recording);
        if (old != null && old.session == c.session) {
            c.reopen(old);
        }
        synchronized (LOCK) {
            if (e != epoch) {
                return null;
            }
            if (contextCount == MAX_CONTEXTS) {
                droppedThreads++;
                Context idle = new Context(t, e, virtual, 0);
                idle.records = 0;
                return idle;
            }
            if (contextCount == contexts.length) {
                contexts = java.util.Arrays.copyOf(contexts, 2 * contextCount);
            }
            c.order = contextCount;
            contexts[contextCount++] = c;
            byThread.put(t, c);
        }
        return c;
    }

    private static boolean isVirtual(Thread t) {
        String n = t.getClass().getName();
        return n.equals("java.lang.VirtualThread") || n.endsWith("$BoundVirtualThread");
    }

    /** Takes {@code n} nodes from the budget of every context; false if it is spent. */
    static boolean takeNodes(int n) {
        synchronized (LOCK) {
            if (nodesLeft < n) {
                return false;
            }
            nodesLeft -= n;
            return true;
        }
    }

    /**
     * Starts a recording: every thread counts into a new context from its next probe, with its
     * open calling contexts carried over (the agent calls it before it starts collecting).
     * {@code noRoot}: every thread counts; {@code nodes}: nodes per context; {@code heapShare}:
     * the fraction of the maximum heap all contexts' nodes may use (at 48 bytes a node).
     */
    public static void reset(boolean noRoot, int nodes, double heapShare, boolean newSession) {
        Context saved = ignoreThisThread();
        try {
            start(noRoot, nodes, heapShare, newSession);
        } finally {
            CONTEXT.set(saved);
        }
    }

    private static void start(boolean noRoot, int nodes, double heapShare, boolean newSession) {
        synchronized (LOCK) {
            if (newSession) {
                session++;
            }
            contexts = new Context[16];
            contextCount = 0;
            byThread = new java.util.IdentityHashMap<>();
            droppedThreads = 0;
            maxNodes = Math.max(2, nodes);
            long heap = Runtime.getRuntime().maxMemory();
            nodesLeft = Math.max(1L << 16, (long) (heap * heapShare) / 48);
            ready = new byte[0];
            all = noRoot;
            int e = lastEpoch + 1;
            lastEpoch = e == 0 ? 1 : e;
            epoch = lastEpoch;
            java.util.Arrays.fill(BY_THREAD, null);
        }
    }

    /** Ends the recording: nothing counts from now on; the contexts stay readable. */
    public static void stop() {
        synchronized (LOCK) {
            epoch = 0;
            java.util.Arrays.fill(BY_THREAD, null);
        }
    }

    /**
     * Every context of the recording, six elements each: the thread's name, then
     * {@code long[] {order, Java thread id, virtual (0/1), overflow calls, unmatched exits,
     * current node}}, then copies of the node arrays {@code int[] method, int[] parent,
     * long[] calls, long[] bytecodes}; after the last context, {@code long[] {threads that did
     * not count}}. The arrays are read while their threads count: each node is whole, a count
     * may lag by the probes in flight.
     */
    public static Object[] contexts() {
        Context saved = ignoreThisThread();
        try {
            return copies();
        } finally {
            CONTEXT.set(saved);
        }
    }

    private static Object[] copies() {
        Context[] cs;
        int n;
        long dropped;
        synchronized (LOCK) {
            cs = contexts;
            n = contextCount;
            dropped = droppedThreads;
        }
        Object[] out = new Object[6 * n + 1];
        for (int i = 0; i < n; i++) {
            cs[i].copyInto(out, 6 * i);
        }
        out[6 * n] = new long[] {dropped};
        return out;
    }

    /**
     * The code the agent runs here (copies, thread names) is not the application's: the calling
     * thread's probes do not count until it puts back the context this returns.
     */
    private static Context ignoreThisThread() {
        Context saved = CONTEXT.get();
        CONTEXT.set(IGNORED);
        Thread t = Thread.currentThread();
        int slot = slot(t);
        Context c = BY_THREAD[slot];
        if (c != null && c.thread == t) {
            BY_THREAD[slot] = null;
        }
        return saved;
    }

    /** What {@link #sample} fills: each context's thread, and the node it is in. */
    private static Object[] sampledThreads = new Object[0];
    private static int[] sampledNodes = new int[0];
    private static int[] sampledAgentCalls = new int[0];
    private static int sampledCount;

    /**
     * For the agent's sampler (sampled timing): fills {@code sampledThreads} and {@code
     * sampledNodes} with each context's thread and the node the thread is in, in the order
     * threads first counted, -1 for a thread that does not record now (outside the roots, or
     * running this class's slow paths), {@code sampledAgentCalls} with how often each left those
     * paths so far, and {@code sampledCount} with how many. Reads fields
     * its threads write without waiting for them: a node may be one probe old. Allocates only
     * when the contexts outgrow the arrays.
     */
    public static void sample() {
        Context[] cs;
        int n;
        int e;
        synchronized (LOCK) {
            cs = contexts;
            n = contextCount;
            e = epoch;
        }
        if (e == 0) {
            sampledCount = 0;
            return;
        }
        Object[] threads = sampledThreads;
        int[] nodes = sampledNodes;
        int[] agent = sampledAgentCalls;
        if (threads.length < n) {
            int size = Math.max(16, 2 * n);
            threads = new Object[size];
            nodes = new int[size];
            agent = new int[size];
            sampledThreads = threads;
            sampledNodes = nodes;
            sampledAgentCalls = agent;
        }
        for (int i = 0; i < n; i++) {
            Context c = cs[i];
            threads[i] = c.thread;
            nodes[i] = c.recording != 0 && !c.busy ? c.current : -1;
            agent[i] = c.agentCalls;
        }
        sampledCount = n;
    }

    /** Test support: marks {@code id} ready without asking the agent. */
    static void markReadyForTest(int id) {
        markReady(id);
    }

    private static native int enter0(int id);

    private static native int exit0(int id);

    private static native int first0(int id);

    private static native int state0();

    /** One thread's calling-context tree. Only its thread writes it. */
    static final class Context {
        final Thread thread;
        final int epoch;
        /** The session its method ids belong to. */
        final int session = Counts.session;
        final boolean virtual;
        /** Nonzero while the thread records (the agent's answer, {@link #RECORDING}). */
        int recording;
        /** {@link #RECORDING}, or 0 for a thread past {@link #MAX_CONTEXTS}: it never records. */
        int records = RECORDING;
        /** The thread runs this class's own slow paths: its probes do not count. */
        boolean busy;
        /**
         * Times the thread left those slow paths (the agent's work: revelation, growing the
         * tree): the sampler leaves out an interval in which it changed.
         */
        int agentCalls;
        int order;

        int[] method = new int[8];
        int[] parent = new int[8];
        /** {@link Counts#key} of each node's parent and method (the entries' one compare). */
        long[] key = new long[8];
        long[] calls = new long[8];
        long[] bytecodes = new long[8];
        /**
         * Children of ready methods by the hash of (parent, method), direct-mapped, the last one
         * entered winning a slot: node (0: none; the root is nobody's child). As long as
         * {@link #table}.
         */
        int[] hot = new int[16];
        /** Open addressing, (parent, method) -> node + 1 (0: empty), at most half full. */
        int[] table = new int[16];
        int size = 1;
        int current;
        /** The node the last entry started from: what {@link #savedContext} returns. */
        int saved;
        /** Calls open inside the overflow node, and the node the outermost was made from. */
        int overflowDepth;
        int overflowReturn;
        int overflowNode = -1;
        long overflowCalls;
        long unmatchedExits;

        Context(Thread thread, int epoch, boolean virtual, int recording) {
            this.thread = thread;
            this.epoch = epoch;
            this.virtual = virtual;
            this.recording = recording;
            method[0] = ROOT;
            key[0] = key(0, ROOT);
        }

        /**
         * Enters the child of the current node for {@code id}. Only a {@code ready} method's
         * child goes into {@link #hot}, where {@link #enterContext} counts it without asking (an
         * unready method's entries must come here).
         */
        void enter(int id, boolean ready) {
            if (overflowDepth > 0) {
                overflowDepth++;
                overflowCalls++;
                calls[current]++;
                saved = current;
                return;
            }
            int p = current;
            saved = p;
            int n = child(p, id);
            if (ready && overflowDepth == 0) {
                int[] h = hot;
                h[hash(p, id) & (h.length - 1)] = n;
            }
            calls[n]++;
            current = n;
        }

        void exit(int id, int n) {
            if (overflowDepth > 0) {
                bytecodes[current] += n & 0xFFFFFFFFL;
                if (--overflowDepth == 0) {
                    current = overflowReturn;
                }
                return;
            }
            int x = current;
            if (method[x] != id) {
                x = open(id);
                if (x == 0) {
                    unmatchedExits++;
                    return;
                }
            }
            // The counter is an int local: an unsigned reading postpones a wrap to 2^32.
            bytecodes[x] += n & 0xFFFFFFFFL;
            current = parent[x];
        }

        /**
         * The innermost open context of {@code id}: frames left without their exit (a session
         * change) are closed with it; 0 if none is open.
         */
        private int open(int id) {
            int x = current;
            while (x != 0 && method[x] != id) {
                x = parent[x];
            }
            return x;
        }


        int child(int p, int id) {
            int[] t = table;
            int mask = t.length - 1;
            int i = hash(p, id) & mask;
            for (;;) {
                int e = t[i];
                if (e == 0) {
                    return add(p, id);
                }
                if (key[e - 1] == key(p, id)) {
                    return e - 1;
                }
                i = (i + 1) & mask;
            }
        }

        /** A new child of {@code p} for {@code id}, or the overflow node past the budgets. */
        private int add(int p, int id) {
            // The Java code growing the arrays runs (has probes): it must not count here.
            int rec = recording;
            recording = 0;
            busy = true;
            try {
                if (size >= maxNodes || !room()) {
                    overflowReturn = p;
                    overflowDepth = 1;
                    overflowCalls++;
                    return overflow();
                }
                return insert(p, id);
            } finally {
                busy = false;
                agentCalls++;
                recording = rec;
            }
        }

        /** Room for one more node: the arrays grow (taking from the budget) when full. */
        private boolean room() {
            if (size < method.length) {
                return true;
            }
            int n = method.length;
            if (!takeNodes(n)) {
                return false;
            }
            // `Arrays.copyOf` may carry these probes: its entry must not count in (and grow)
            // this tree again while it grows.
            int rec = recording;
            recording = 0;
            try {
                int[] m = java.util.Arrays.copyOf(method, 2 * n);
                int[] pa = java.util.Arrays.copyOf(parent, 2 * n);
                long[] ca = java.util.Arrays.copyOf(calls, 2 * n);
                long[] by = java.util.Arrays.copyOf(bytecodes, 2 * n);
                long[] k = java.util.Arrays.copyOf(key, 2 * n);
                int[] t = new int[4 * n];
                int[] ho = new int[4 * n];
                for (int x = 1; x < size; x++) {
                    put(t, pa[x], m[x], x);
                }
                // The node arrays before the table: a reader copies up to a size it read first.
                bytecodes = by;
                calls = ca;
                key = k;
                hot = ho;
                parent = pa;
                method = m;
                table = t;
                return true;
            } catch (OutOfMemoryError e) {
                return false;
            } finally {
                recording = rec;
            }
        }

        private static void put(int[] t, int p, int id, int node) {
            int mask = t.length - 1;
            int i = hash(p, id) & mask;
            while (t[i] != 0) {
                i = (i + 1) & mask;
            }
            t[i] = node + 1;
        }

        private int insert(int p, int id) {
            int x = size;
            method[x] = id;
            parent[x] = p;
            key[x] = key(p, id);
            put(table, p, id, x);
            size = x + 1;
            return x;
        }

        /** The overflow node (a child of the root that keeps no structure). */
        private int overflow() {
            if (overflowNode < 0) {
                if (size < method.length) {
                    overflowNode = size;
                    method[size] = OVERFLOW;
                    parent[size] = 0;
                    key[size] = key(0, OVERFLOW);
                    size++;
                } else {
                    // No room at all: the root counts them.
                    overflowNode = 0;
                }
            }
            return overflowNode;
        }

        /** Opens the calling contexts open in {@code old}, root first, with no counts. */
        void reopen(Context old) {
            // Overflowing calls in flight are forgotten: their exits will be unmatched.
            int x = old.overflowDepth > 0 ? old.overflowReturn : old.current;
            int depth = 0;
            for (int y = x; y != 0; y = old.parent[y]) {
                depth++;
            }
            int[] path = new int[depth];
            for (int y = x; y != 0; y = old.parent[y]) {
                path[--depth] = old.method[y];
            }
            for (int id : path) {
                if (id == OVERFLOW || size >= maxNodes || !room()) {
                    break;
                }
                current = child(current, id);
            }
        }

        void copyInto(Object[] out, int at) {
            int n = size;
            int[] m = method;
            int[] p = parent;
            long[] c = calls;
            long[] b = bytecodes;
            n = Math.min(n, Math.min(Math.min(m.length, p.length), Math.min(c.length, b.length)));
            out[at] = thread.getName();
            out[at + 1] = new long[] {order, thread.getId(), virtual ? 1 : 0, overflowCalls,
                unmatchedExits, current};
            out[at + 2] = java.util.Arrays.copyOf(m, n);
            out[at + 3] = java.util.Arrays.copyOf(p, n);
            out[at + 4] = java.util.Arrays.copyOf(c, n);
            out[at + 5] = java.util.Arrays.copyOf(b, n);
        }
    }
}
