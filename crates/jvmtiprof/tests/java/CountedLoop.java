/**
 * A hot counted int loop with no safepoint poll inside (with a collector that does not ask for
 * polls in counted loops, e.g. -XX:+UseParallelGC), inlined into a driver loop whose back edge
 * polls: a sampler that stops threads at safepoints sees them in run(), never in sum().
 */
public class CountedLoop {
    static volatile int sink;

    static int sum(int[] a) {
        int s = 0;
        for (int i = 0; i < a.length; i++) {
            s += a[i] * 31 ^ i;
        }
        return s;
    }

    static void run(int[] a, int rounds) {
        for (int r = 0; r < rounds; r++) {
            a[r & 1023] = r;
            sink += sum(a);
        }
    }

    public static void main(String[] args) throws java.io.IOException {
        int[] a = new int[200_000];
        for (int i = 0; i < a.length; i++) {
            a[i] = i * 7;
        }
        int rounds = Integer.parseInt(args[0]);
        if (args.length > 1 && args[1].equals("wait")) {
            // Compiled before an agent attaches.
            run(a, rounds);
            try {
                Thread.sleep(1000);
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
            System.out.println("ready");
            new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
        }
        run(a, rounds);
        System.out.println("done " + (sink != 42));
    }
}
