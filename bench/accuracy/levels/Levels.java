// Does a short calibration on another thread see the level a busy thread's JNI calls run at?
// `app` calls a no-op JNI native without pause, 20,000 calls per sample; `burst` does the same
// once every 20 ms, as a periodic calibration on an agent thread would. Printed: for each of
// the app's two levels (split at the midpoint of its fastest and median sample), how many
// bursts fell in it and what the bursts and the app measured there (medians, ns per call).
import java.util.Arrays;

public class Levels {
    static native void probe(int id);

    static { System.loadLibrary("nprobe"); }

    static volatile boolean stop;
    static final int CALLS = 20_000;

    static void loop() {
        for (int i = 0; i < CALLS; i++) {
            probe(i);
        }
    }

    /** Samples (start ns, ns per call) of `loop` until `stop`, sleeping `pauseMs` between. */
    static Thread sampler(long[] at, double[] ns, int[] n, int pauseMs) {
        return new Thread(() -> {
            while (!stop && n[0] < at.length) {
                long t0 = System.nanoTime();
                loop();
                long t1 = System.nanoTime();
                at[n[0]] = t0;
                ns[n[0]++] = (t1 - t0) / (double) CALLS;
                if (pauseMs > 0) {
                    try {
                        Thread.sleep(pauseMs);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        });
    }

    static double median(double[] xs, int n) {
        if (n == 0) {
            return Double.NaN;
        }
        double[] s = Arrays.copyOf(xs, n);
        Arrays.sort(s);
        return s[n / 2];
    }

    public static void main(String[] args) throws Exception {
        int seconds = Integer.parseInt(args[0]);
        long[] appAt = new long[1 << 20];
        double[] appNs = new double[1 << 20];
        long[] burstAt = new long[1 << 16];
        double[] burstNs = new double[1 << 16];
        int[] nApp = {0};
        int[] nBurst = {0};
        for (int w = 0; w < 50; w++) {
            loop(); // compiled before either thread measures
        }
        Thread app = sampler(appAt, appNs, nApp, 0);
        Thread burst = sampler(burstAt, burstNs, nBurst, 20);
        app.start();
        burst.start();
        Thread.sleep(seconds * 1000L);
        stop = true;
        app.join();
        burst.join();
        double split = (median(appNs, nApp[0]) + Arrays.stream(appNs, 0, nApp[0]).min().orElse(0)) / 2;
        // The app's level during each burst: its samples overlapping the burst's interval.
        double[][] burstIn = new double[2][nBurst[0]];
        double[][] appIn = new double[2][nBurst[0]];
        int[] count = new int[2];
        int j = 0;
        for (int i = 0; i < nBurst[0]; i++) {
            long start = burstAt[i];
            long end = start + (long) (burstNs[i] * CALLS);
            while (j < nApp[0] && appAt[j] + (long) (appNs[j] * CALLS) < start) {
                j++;
            }
            double sum = 0;
            int c = 0;
            for (int k = j; k < nApp[0] && appAt[k] <= end; k++) {
                sum += appNs[k];
                c++;
            }
            if (c == 0) {
                continue;
            }
            int level = sum / c < split ? 0 : 1;
            burstIn[level][count[level]] = burstNs[i];
            appIn[level][count[level]++] = sum / c;
        }
        System.out.printf("app samples %d, bursts %d, levels split at %.2f ns per call%n",
                nApp[0], nBurst[0], split);
        String[] names = {"fast", "slow"};
        for (int l = 0; l < 2; l++) {
            System.out.printf("app at its %s level: %d bursts, app %.2f ns, burst %.2f ns per call%n",
                    names[l], count[l], median(appIn[l], count[l]), median(burstIn[l], count[l]));
        }
    }
}
