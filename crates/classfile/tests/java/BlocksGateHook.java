import ferrofluid.Hooks;

/**
 * Runs the Java bodies of the generated {@code Hooks.exitBlocks/unwindBlocks(int, int)}
 * (natives unbound: reaching {@code exitBlocks0}/{@code unwindBlocks0} throws
 * UnsatisfiedLinkError), often enough for the JIT to compile them: outside every root
 * ({@code active == 0}) a method's probe returns in Java unless its id is negative (a root,
 * passed as {@code ~id}); inside one, it reaches the native.
 */
public class BlocksGateHook {
    static String call(int hook, int id) {
        try {
            if (hook == 0) Hooks.exitBlocks(id, 3);
            else Hooks.unwindBlocks(id, 3);
            return "java";
        } catch (UnsatisfiedLinkError e) {
            return e.getMessage().contains(hook == 0 ? "exitBlocks0" : "unwindBlocks0") ? "native" : e.toString();
        }
    }

    public static void main(String[] args) {
        String first = null;
        for (int round = 0; round < 3000; round++) {
            StringBuilder s = new StringBuilder();
            for (int hook = 0; hook < 2; hook++) {
                Hooks.active = 0;
                s.append(hook == 0 ? "" : " | ");
                String sep = "";
                for (int id : new int[] {5, ~5, 0, Integer.MAX_VALUE, Integer.MIN_VALUE}) {
                    s.append(sep).append(call(hook, id));
                    sep = " ";
                }
                for (int i = 0; i < 20; i++) {
                    if (!call(hook, 7).equals("java")) throw new AssertionError("outside a root, native path");
                }
                Hooks.active = 1;
                s.append(" /");
                for (int id : new int[] {5, ~5, 0}) {
                    s.append(' ').append(call(hook, id));
                }
            }
            Hooks.active = 0;
            if (first == null) first = s.toString();
            else if (!s.toString().equals(first)) throw new AssertionError(s + " after " + first);
        }
        System.out.println(first);
    }
}
