package ferrofluid;

/** Java bodies gated on a static field, 0 here: the cost of inert wrappers (no session). */
public final class Hooks {
    public static int active;
    public static void nativeEnter(int id) { if (active != 0) enter0(id); }
    public static void nativeExit(int id) { if (active != 0) exit0(id); }
    static native void enter0(int id);
    static native void exit0(int id);
}
