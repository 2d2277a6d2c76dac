package ferrofluid;

/**
 * Drives {@code Counts} without an agent: no root, every method marked ready, so that no native
 * is called; the main thread plays the agent (it resets and reads), the probes run on threads
 * "worker" and "second". Prints each context's nodes as
 * {@code method parent calls bytecodes}.
 */
public final class CountsDriver {
    public static void main(String[] args) throws Exception {
        String what = args.length > 0 ? args[0] : "";
        Counts.reset(true, what.equals("overflow") ? 4 : 1 << 20, 0.05, true);
        for (int id = 0; id < 8; id++) {
            Counts.markReadyForTest(id);
        }
        Thread worker = new Thread(() -> work(what), "worker");
        worker.start();
        worker.join();
        print(Counts.contexts());
    }

    /** Open frames' contexts, as the probes keep them in a local of each frame. */
    private static final java.util.ArrayDeque<Object> FRAMES = new java.util.ArrayDeque<>();
    /** Each open frame's saved node (what the probes keep in a second local). */
    private static final java.util.ArrayDeque<Integer> SAVED = new java.util.ArrayDeque<>();

    private static void enter(int id) {
        Object c = Counts.enterContext(id);
        FRAMES.push(c == null ? FRAMES : c);
        SAVED.push(Counts.savedContext(c));
    }

    private static void exit(int id, int bytecodes) {
        Object c = FRAMES.isEmpty() ? null : FRAMES.pop();
        int saved = SAVED.isEmpty() ? 0 : SAVED.pop();
        Counts.exitContext(c == FRAMES ? null : c, id, bytecodes, saved);
    }

    private static void work(String what) {
        if (what.equals("overflow")) {
            // Nodes: root, 1, 2, 3; then 4 and 5 overflow.
            enter(1);
            enter(2);
            exit(2, 3);
            enter(3);
            enter(4);
            enter(5);
            exit(5, 7);
            exit(4, 6);
            exit(3, 2);
            exit(1, 1);
        } else {
            // f(1) loops 3 times calling h(3) and g(2, i); g(i) calls h i times (JP's Fig. 4).
            enter(1);
            for (int i = 0; i < 3; i++) {
                enter(3);
                exit(3, 4);
                enter(2);
                for (int j = 0; j < i; j++) {
                    enter(3);
                    exit(3, 4);
                }
                exit(2, 5 + 2 * i);
            }
            // An exit whose entry was not seen, and one that closes a frame left open.
            exit(6, 9);
            enter(7);
            exit(1, 10);
            Thread t = new Thread(() -> {
                enter(4);
                exit(4, -1);
            }, "second");
            t.start();
            try {
                t.join();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }

    private static void print(Object[] all) {
        for (int i = 0; i + 6 <= all.length; i += 6) {
            long[] meta = (long[]) all[i + 1];
            int[] m = (int[]) all[i + 2];
            int[] p = (int[]) all[i + 3];
            long[] c = (long[]) all[i + 4];
            long[] b = (long[]) all[i + 5];
            System.out.println(all[i] + " order=" + meta[0] + " overflow=" + meta[3]
                + " unmatched=" + meta[4] + " current=" + meta[5]);
            for (int n = 0; n < m.length; n++) {
                System.out.println(m[n] + " " + p[n] + " " + c[n] + " " + b[n]);
            }
        }
        System.out.println("dropped=" + ((long[]) all[all.length - 1])[0]);
    }
}
