package ferrofluid;

/** Counting hooks for the planner's end-to-end test: prints "id count" per entered method at exit. */
public final class Hooks {
    private static final int[] COUNTS = new int[4096];

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (int id = 0; id < COUNTS.length; id++) {
                if (COUNTS[id] > 0) {
                    System.out.println("ferrofluid-count " + id + " " + COUNTS[id]);
                }
            }
        }));
    }

    private Hooks() {}

    public static void enter(int id) {
        COUNTS[id]++;
    }

    public static void exit(int id) {}

    public static void unwind(int id) {}
}
