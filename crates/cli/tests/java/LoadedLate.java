import java.io.BufferedReader;
import java.io.InputStreamReader;

/**
 * A class loaded on request, after a profile began: `load` loads and initialises `Late`, `call`
 * calls `Late.tick` once (which calls `leaf` seven times), `quit` ends. One line out per command.
 */
public class LoadedLate {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        String line;
        while ((line = in.readLine()) != null) {
            switch (line) {
                case "load":
                    Class.forName("LoadedLate$Late");
                    System.out.println("loaded");
                    break;
                case "call":
                    System.out.println("called " + Late.tick());
                    break;
                case "quit":
                    System.out.println("done");
                    return;
                default:
                    System.out.println("unknown " + line);
            }
        }
    }

    static class Late {
        static int tick() {
            int sum = 0;
            for (int i = 0; i < 7; i++) {
                sum += leaf(i);
            }
            return sum;
        }

        static int leaf(int i) {
            return i * 2;
        }
    }
}
