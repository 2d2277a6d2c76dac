/**
 * `--adaptive`: `small` is called often and is far shorter than its probes; `big` is not. The
 * argument is `big`'s iterations per round (200000 by default): the longer it runs, the smaller
 * the share of the round that `small`'s gates would cost once dropped. With a second argument
 * `hold`, a thread sits in `hold` (sleeping) for the whole run.
 */
public class Adaptive {
    static int sink;

    // Not trivial (a branch), a few nanoseconds.
    static int small(int x) {
        if ((x & 7) == 3) {
            return x * 3 + 1;
        }
        return x ^ (x >>> 3);
    }

    // A loop: milliseconds per call.
    static int big(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            s += (s >>> 1) ^ i;
        }
        return s;
    }

    static void round(int bigIterations) {
        for (int i = 0; i < 20_000; i++) {
            sink += small(i);
        }
        sink += big(bigIterations);
    }

    static void hold(long until) throws InterruptedException {
        Thread.sleep(Math.max(0, (until - System.nanoTime()) / 1_000_000));
    }

    /** Outside every root: `small` is compiled before the agent's first look at the rounds. */
    static void warm() {
        for (int i = 0; i < 500_000; i++) {
            sink += small(i);
        }
    }

    public static void main(String[] args) throws InterruptedException {
        int bigIterations = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
        // In a thread of its own, so that main's tree holds nothing but the rounds.
        Thread warming = new Thread(Adaptive::warm, "warm");
        warming.start();
        warming.join();
        // Long enough for the agent's first looks (half a second after collection starts).
        long end = System.nanoTime() + 2_500_000_000L;
        Thread holder = null;
        if (args.length > 1 && args[1].equals("hold")) {
            holder = new Thread("holder") {
                @Override
                public void run() {
                    try {
                        hold(end + 100_000_000L);
                    } catch (InterruptedException e) {
                        throw new RuntimeException(e);
                    }
                }
            };
            holder.start();
        }
        int rounds = 0;
        while (System.nanoTime() < end) {
            round(bigIterations);
            rounds++;
        }
        if (holder != null) {
            holder.join();
        }
        System.out.println(rounds);
    }
}
