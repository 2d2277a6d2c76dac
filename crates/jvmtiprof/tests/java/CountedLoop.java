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

    public static void main(String[] args) {
        int[] a = new int[200_000];
        for (int i = 0; i < a.length; i++) {
            a[i] = i * 7;
        }
        run(a, Integer.parseInt(args[0]));
        System.out.println("done " + (sink != 42));
    }
}
