<?xml version="1.0"?>
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="html" indent="yes"/>
  <xsl:template match="/inventory">
    <html><body><table>
      <xsl:for-each select="item"><xsl:sort select="@sku"/>
        <tr><td><xsl:value-of select="translate(., 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ')"/></td>
        <td><xsl:value-of select="format-number(@qty * @price, '#,##0.00')"/></td><td><xsl:number value="position()" format="i"/></td></tr>
      </xsl:for-each>
      <tr><td>total</td><td><xsl:value-of select="format-number(sum(item/@qty), '0')"/></td></tr>
    </table></body></html>
  </xsl:template>
</xsl:stylesheet>
