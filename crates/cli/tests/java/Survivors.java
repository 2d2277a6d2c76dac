import java.util.ArrayList;
import java.util.List;

/**
 * Objects that survive a GC and objects that do not: {@code KEPT} of class Kept stay reachable
 * across one forced GC, {@code DROPPED} of class Dropped are garbage before it, and {@code LATE}
 * of class Late are allocated (and kept) after it, so no GC has looked at them. One site,
 * {@code make}, allocates the Items of two calling contexts: {@code ITEMS_KEPT} kept across the GC
 * (from {@code keepItems}) and {@code ITEMS_DROPPED} garbage before it (from {@code dropItems}).
 */
public class Survivors {
    static final int KEPT = 300;
    static final int DROPPED = 500;
    static final int LATE = 70;
    static final int ITEMS_KEPT = 200;
    static final int ITEMS_DROPPED = 300;

    static final List<Object> kept = new ArrayList<>();

    static final class Kept {
        long value;
    }

    static final class Dropped {
        long value;
    }

    static final class Late {
        long value;
    }

    static final class Item {
        long value;
    }

    static Item make(int i) {
        Item item = new Item();
        item.value = i;
        return item;
    }

    static void keepItems() {
        for (int i = 0; i < ITEMS_KEPT; i++) {
            kept.add(make(i));
        }
    }

    static long dropItems() {
        long sum = 0;
        for (int i = 0; i < ITEMS_DROPPED; i++) {
            sum += make(i).value;
        }
        return sum;
    }

    public static void main(String[] args) {
        kept.add(null);
        kept.clear();
        long sum = 0;
        for (int i = 0; i < KEPT; i++) {
            Kept k = new Kept();
            k.value = i;
            kept.add(k);
        }
        for (int i = 0; i < DROPPED; i++) {
            Dropped d = new Dropped();
            d.value = i;
            sum += d.value;
        }
        keepItems();
        sum += dropItems();
        System.gc();
        for (int i = 0; i < LATE; i++) {
            Late l = new Late();
            l.value = i;
            kept.add(l);
        }
        System.out.println(kept.size() + " " + sum);
    }
}
