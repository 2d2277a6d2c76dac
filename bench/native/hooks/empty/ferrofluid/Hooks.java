package ferrofluid;

/** Hooks that do nothing: the cost of the wrapper alone. */
public final class Hooks {
    public static void nativeEnter(int id) {}
    public static void nativeExit(int id) {}
}
