package ferrofluid;

/**
 * No-op hooks for running statically instrumented code.
 *
 * <p>Probes inserted by {@code ferrofluid instrument} call these static methods; the agent
 * defines a class of the same shape that records the calls. This one does nothing, so an
 * instrumented program must behave exactly like the original. Put it on the boot class path
 * ({@code -Xbootclasspath/a:DIR}) so classes of every loader can see it. The engine never
 * instruments this class.
 */
public final class Hooks {
    private Hooks() {}

    /** Nonzero while some thread is inside a root's extent (the agent's class keeps it). */
    public static int active = 1;

    /** Method {@code id} was entered. */
    public static void enter(int id) {}

    /** Method {@code id} returns normally. */
    public static void exit(int id) {}

    /** Method {@code id} exits by an exception. */
    public static void unwind(int id) {}

    /** Method {@code id} returns normally after executing {@code bytecodes} bytecodes. */
    public static void exitBlocks(int id, int bytecodes) {}

    /** Method {@code id} exits by an exception after executing {@code bytecodes} bytecodes. */
    public static void unwindBlocks(int id, int bytecodes) {}

    /** Allocation site {@code site} created {@code object}. */
    public static void alloc(Object object, int site) {}

    /** Native method {@code id} is about to be called. */
    public static void nativeEnter(int id) {}

    /** Native method {@code id} returned or threw. */
    public static void nativeExit(int id) {}

    /** A virtual call at receiver site {@code site} is about to be made on {@code receiver}. */
    public static void receiver(Object receiver, int site) {}

    /** Gateway {@code kind} (reflection, method handles) is entered with {@code target}. */
    public static void reveal(Object target, int kind) {}

    /** The call(s) of deferred site {@code site} are about to be made. */
    public static void site(int site) {}
}
