import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Allocates through the JDK's collections and StringBuilder (the alloc tests of JDK sites). */
public class JdkAllocs {
    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
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
