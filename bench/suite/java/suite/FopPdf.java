package suite;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.StringReader;
import java.util.Date;
import javax.xml.transform.Transformer;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.sax.SAXResult;
import javax.xml.transform.stream.StreamSource;
import org.apache.fop.apps.FOUserAgent;
import org.apache.fop.apps.Fop;
import org.apache.fop.apps.FopFactory;
import org.apache.fop.apps.MimeConstants;

/** FOP: lays out and renders SCALE generated documents (text, lists, tables) to PDF. */
public final class FopPdf {
    public static void main(String[] args) throws Exception {
        int scale = Sum.scale(args, 10);
        Sum sum = new Sum();
        FopFactory factory = FopFactory.newInstance(new File(".").toURI());
        TransformerFactory tf = TransformerFactory.newInstance();
        for (int doc = 0; doc < scale; doc++) {
            FOUserAgent agent = factory.newFOUserAgent();
            // Fixed metadata: the PDF must not depend on the clock.
            agent.setCreationDate(new Date(0));
            agent.setProducer("ferrofluid-suite");
            ByteArrayOutputStream pdf = new ByteArrayOutputStream();
            Fop fop = factory.newFop(MimeConstants.MIME_PDF, agent, pdf);
            Transformer t = tf.newTransformer();
            t.transform(new StreamSource(new StringReader(document(new Sum.Rng(doc)))),
                    new SAXResult(fop.getDefaultHandler()));
            sum.add(blankId(pdf.toByteArray())).add(fop.getResults().getPageCount());
        }
        sum.print("fop");
    }

    static String document(Sum.Rng rng) {
        StringBuilder fo = new StringBuilder();
        fo.append("<fo:root xmlns:fo='http://www.w3.org/1999/XSL/Format'><fo:layout-master-set>")
                .append("<fo:simple-page-master master-name='p' page-height='29.7cm' page-width='21cm' margin='2cm'>")
                .append("<fo:region-body/></fo:simple-page-master></fo:layout-master-set>")
                .append("<fo:page-sequence master-reference='p'><fo:flow flow-name='xsl-region-body'>");
        for (int section = 0; section < 12; section++) {
            fo.append("<fo:block font-size='16pt' font-weight='bold' space-before='12pt' keep-with-next='always'>Section ")
                    .append(section).append(' ').append(Sum.words(rng, 3)).append("</fo:block>");
            for (int para = 0; para < 6; para++) {
                fo.append("<fo:block text-align='justify' space-after='6pt' hyphenate='false'>")
                        .append(Sum.words(rng, 60 + rng.next(80))).append("</fo:block>");
            }
            fo.append("<fo:table table-layout='fixed' width='100%' border='0.5pt solid black'>")
                    .append("<fo:table-column column-width='20%'/><fo:table-column column-width='50%'/>")
                    .append("<fo:table-column column-width='30%'/><fo:table-body>");
            for (int row = 0; row < 25; row++) {
                fo.append("<fo:table-row><fo:table-cell border='0.5pt solid gray'><fo:block>").append(row)
                        .append("</fo:block></fo:table-cell><fo:table-cell border='0.5pt solid gray'><fo:block>")
                        .append(Sum.words(rng, 4 + rng.next(10)))
                        .append("</fo:block></fo:table-cell><fo:table-cell border='0.5pt solid gray'><fo:block text-align='end'>")
                        .append(rng.next(1000000) / 100.0).append("</fo:block></fo:table-cell></fo:table-row>");
            }
            fo.append("</fo:table-body></fo:table>");
        }
        fo.append("</fo:flow></fo:page-sequence></fo:root>");
        return fo.toString();
    }

    /**
     * Zeroes what FOP takes from the clock despite the fixed creation date: the hex digits of the
     * PDF's /ID and the digits of PDF dates ("D:" + 14 digits) and XMP dates (dddd-dd-ddTdd:dd:dd).
     */
    static byte[] blankId(byte[] pdf) {
        byte[] id = "/ID [<".getBytes();
        for (int i = 0; i < pdf.length; i++) {
            if (startsWith(pdf, i, id)) {
                for (int j = i + id.length; j < pdf.length && pdf[j] != ']'; j++) {
                    if (Character.digit(pdf[j], 16) >= 0) {
                        pdf[j] = '0';
                    }
                }
            } else if (pdf[i] == 'D' && i + 16 <= pdf.length && pdf[i + 1] == ':' && digits(pdf, i + 2, 14)) {
                java.util.Arrays.fill(pdf, i + 2, i + 16, (byte) '0');
            } else if (i + 19 <= pdf.length && isoDate(pdf, i)) {
                for (int j = i; j < i + 19; j++) {
                    if (Character.isDigit(pdf[j])) {
                        pdf[j] = '0';
                    }
                }
            }
        }
        return pdf;
    }

    static boolean startsWith(byte[] b, int at, byte[] prefix) {
        if (at + prefix.length > b.length) {
            return false;
        }
        for (int k = 0; k < prefix.length; k++) {
            if (b[at + k] != prefix[k]) {
                return false;
            }
        }
        return true;
    }

    static boolean digits(byte[] b, int from, int n) {
        for (int k = from; k < from + n; k++) {
            if (!Character.isDigit(b[k])) {
                return false;
            }
        }
        return true;
    }

    static boolean isoDate(byte[] b, int at) {
        String shape = "dddd-dd-ddTdd:dd:dd";
        for (int k = 0; k < shape.length(); k++) {
            char c = shape.charAt(k);
            if (c == 'd' ? !Character.isDigit(b[at + k]) : b[at + k] != c) {
                return false;
            }
        }
        return true;
    }
}
