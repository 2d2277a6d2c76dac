import java.io.BufferedReader;
import java.io.InputStreamReader;

// Prints a checksum every 20 ms forever (the program the agent must not disturb) and runs Fig4.f
// on request: a line `run N` on stdin runs it N times and prints `done N <sink>`.
// With arguments `once N` it runs f N times, prints `done N <sink>` and exits.
public class Driver {
    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("once")) {
            int n = Integer.parseInt(args[1]);
            for (int i = 0; i < n; i++) {
                Fig4.f();
            }
            System.out.println("done " + n + " " + Fig4.sink);
            return;
        }
        Thread ticker = new Thread(() -> {
            long c = 0;
            for (long i = 1; ; i++) {
                c = c * 31 + i;
                System.out.println(i + " " + c);
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "ticker");
        ticker.setDaemon(true);
        ticker.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("run ")) {
                int n = Integer.parseInt(line.substring(4));
                for (int i = 0; i < n; i++) {
                    Fig4.f();
                }
                System.out.println("done " + n + " " + Fig4.sink);
            }
        }
    }
}
