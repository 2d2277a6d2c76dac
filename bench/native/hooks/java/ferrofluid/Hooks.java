package ferrofluid;

/**
 * The transitions kept in Java: a per-thread state reached through a ThreadLocal, the clock
 * read with System.nanoTime (an intrinsic: no JNI transition).
 */
public final class Hooks {
    static final int MAX_IDS = 4096;

    static final class State {
        long last = System.nanoTime();
        long nativeNs, bytecodeNs;
        int depth;
        final int[] stack = new int[256];
        final long[] calls = new long[MAX_IDS], ns = new long[MAX_IDS];
    }

    static final ThreadLocal<State> STATE = new ThreadLocal<State>() {
        @Override
        protected State initialValue() {
            return new State();
        }
    };

    public static void nativeEnter(int id) {
        State s = STATE.get();
        long t = System.nanoTime();
        s.bytecodeNs += t - s.last;
        s.last = t;
        s.calls[id]++;
        if (s.depth < 256) s.stack[s.depth] = id;
        s.depth++;
    }

    public static void nativeExit(int id) {
        State s = STATE.get();
        long t = System.nanoTime();
        s.nativeNs += t - s.last;
        s.ns[id] += t - s.last;
        s.last = t;
        if (s.depth > 0) s.depth--;
    }
}
