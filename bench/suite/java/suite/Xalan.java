package suite;

import java.io.StringReader;
import java.io.StringWriter;
import javax.xml.transform.Transformer;
import javax.xml.transform.stream.StreamResult;
import javax.xml.transform.stream.StreamSource;
import org.apache.xalan.processor.TransformerFactoryImpl;

/** Xalan (interpretive XSLT): sorts, groups (Muenchian keys) and formats a generated inventory. */
public final class Xalan {
    static final String XSL = "<xsl:stylesheet version='1.0' xmlns:xsl='http://www.w3.org/1999/XSL/Transform'>\n"
            + "<xsl:output method='html' indent='yes'/>\n"
            + "<xsl:key name='by-cat' match='item' use='@cat'/>\n"
            + "<xsl:template match='/inventory'>\n"
            + " <html><body>\n"
            + "  <xsl:for-each select='item[generate-id() = generate-id(key(\"by-cat\", @cat)[1])]'>\n"
            + "   <xsl:sort select='@cat'/>\n"
            + "   <xsl:variable name='c' select='@cat'/>\n"
            + "   <h2><xsl:value-of select='translate($c, \"abcdefghijklmnopqrstuvwxyz\", \"ABCDEFGHIJKLMNOPQRSTUVWXYZ\")'/>"
            + " (<xsl:value-of select='count(key(\"by-cat\", $c))'/>)</h2>\n"
            + "   <table>\n"
            + "    <xsl:for-each select='key(\"by-cat\", $c)'>\n"
            + "     <xsl:sort select='@price' data-type='number' order='descending'/>\n"
            + "     <xsl:sort select='name'/>\n"
            + "     <xsl:if test='position() &lt;= 50'>\n"
            + "      <tr><td><xsl:value-of select='position()'/></td><td><xsl:value-of select='concat(substring(name, 1, 12), \"-\", string-length(desc))'/></td>\n"
            + "      <td><xsl:value-of select='format-number(@price * @qty, \"#,##0.00\")'/></td>\n"
            + "      <td><xsl:value-of select='count(tag[contains(., \"e\")])'/></td></tr>\n"
            + "     </xsl:if>\n"
            + "    </xsl:for-each>\n"
            + "   </table>\n"
            + "   <p>total <xsl:value-of select='format-number(sum(key(\"by-cat\", $c)/@qty), \"#,##0\")'/></p>\n"
            + "  </xsl:for-each>\n"
            + " </body></html>\n"
            + "</xsl:template>\n"
            + "</xsl:stylesheet>\n";

    public static void main(String[] args) throws Exception {
        int scale = Sum.scale(args, 20);
        Sum sum = new Sum();
        TransformerFactoryImpl factory = new TransformerFactoryImpl();
        // Scale 0 is the CI smoke size: one small inventory.
        int items = scale == 0 ? 200 : 2000;
        for (int round = 0; round < Math.max(scale, 1); round++) {
            Sum.Rng rng = new Sum.Rng(round);
            StringBuilder xml = new StringBuilder("<inventory>\n");
            for (int i = 0; i < items; i++) {
                xml.append("<item cat='c").append(rng.next(40)).append("' price='")
                        .append(rng.next(100000) / 100.0).append("' qty='").append(rng.next(500)).append("'>")
                        .append("<name>").append(Sum.words(rng, 2)).append(i).append("</name>")
                        .append("<desc>").append(Sum.words(rng, 8)).append("</desc>");
                for (int t = rng.next(4); t >= 0; t--) {
                    xml.append("<tag>").append(Sum.words(rng, 1)).append("</tag>");
                }
                xml.append("</item>\n");
            }
            xml.append("</inventory>\n");
            Transformer transformer = factory.newTransformer(new StreamSource(new StringReader(XSL)));
            StringWriter out = new StringWriter();
            transformer.transform(new StreamSource(new StringReader(xml.toString())), new StreamResult(out));
            sum.add(out.toString());
        }
        sum.print("xalan");
    }
}
