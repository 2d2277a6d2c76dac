import java.util.ArrayList;
import java.util.List;

/** A lambda, a method reference and a string concatenation (an invokedynamic to ignore). */
public class Lambdas {
    static int total;

    public static void main(String[] args) {
        run();
        System.out.println("total " + total);
    }

    static void run() {
        List<Integer> list = new ArrayList<>(List.of(1, 2, 3));
        list.forEach(x -> work(x));
        Runnable r = Lambdas::helper;
        r.run();
    }

    static void work(int x) {
        total += x;
    }

    static void helper() {}
}
