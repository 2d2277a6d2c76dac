package ferrofluid;

/** IPA's design: each transition is a JNI call into the agent (stick.c), which reads the TSC. */
public final class Hooks {
    public static native void nativeEnter(int id);
    public static native void nativeExit(int id);
}
