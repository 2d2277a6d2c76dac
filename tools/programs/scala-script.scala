object T {
  def main(args: Array[String]): Unit = {
    val xs = (1 to 20).map(i => i * i).filter(_ % 3 != 0)
    println(xs.mkString(","))
    println(xs.groupBy(_ % 5).toSeq.sortBy(_._1).map { case (k, v) => s"$k=${v.sum}" }.mkString(" "))
    case class P(n: String, a: Int)
    println(List(P("b", 2), P("a", 1)).sortBy(_.a))
  }
}
