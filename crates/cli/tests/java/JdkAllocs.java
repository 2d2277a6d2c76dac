import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Allocates through the JDK's collections and StringBuilder (the alloc tests of JDK sites), and
 * in a static initialiser, which the VM calls (its allocation paths go on below it).
 */
public class JdkAllocs {
    static final class InitEntry {}

    static final class Init {
        static final Object[] TABLE = new Object[100];

        static {
            for (int i = 0; i < TABLE.length; i++) TABLE[i] = new InitEntry();
        }
    }

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        if (Init.TABLE.length != 100) throw new AssertionError();
        Map<Integer, String> map = new HashMap<>();
        for (int i = 0; i < n; i++) map.put(i, "v");
        TreeMap<Integer, String> tree = new TreeMap<>();
        for (int i = 0; i < n; i++) tree.put(i, "v");
        LinkedList<Integer> linked = new LinkedList<>();
        for (int i = 0; i < n; i++) linked.add(i);
        List<Integer> list = new ArrayList<>();
        for (int i = 0; i < n; i++) list.add(i);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) sb.append("xy");
        System.out.println(map.size() + " " + tree.size() + " " + linked.size() + " " + list.size() + " " + sb.length());
    }
}
