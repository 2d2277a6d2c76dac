import java.io.FileOutputStream;
import java.io.PrintStream;

/**
 * The `native` mode at an attach: prints `ready`, waits for the file args[1], then runs
 * NativeExact (args[0] its library), whose class, and so its natives, load only then, after the
 * agent attached. NativeExact's line goes to args[1] + ".out"; `done` is the last output.
 */
public class NativeLate {
    public static void main(String[] args) throws Exception {
        System.out.println("ready");
        System.out.flush();
        java.io.File go = new java.io.File(args[1]);
        while (!go.exists()) {
            Thread.sleep(10);
        }
        PrintStream out = System.out;
        try (PrintStream said = new PrintStream(new FileOutputStream(args[1] + ".out"))) {
            System.setOut(said);
            NativeExact.main(new String[] {args[0]});
        } finally {
            System.setOut(out);
        }
        System.out.println("done");
    }
}
