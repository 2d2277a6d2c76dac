import java.io.IOException;
import java.nio.charset.StandardCharsets;

import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.HandlerList;
import org.eclipse.jetty.server.handler.ResourceHandler;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * Embedded Jetty 9: {@code JettyMain PORT DIR} serves the static files of DIR and, under
 * {@code /report?seed=S&rows=N}, a servlet rendering {@link Report#render}.
 */
public final class JettyMain {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        Server server = new Server(new QueuedThreadPool(32, 8));
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(port);
        server.addConnector(connector);
        ServletContextHandler reports = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
        reports.setContextPath("/report");
        reports.addServlet(ReportServlet.class, "/*");
        ResourceHandler files = new ResourceHandler();
        files.setResourceBase(args[1]);
        files.setDirectoriesListed(false);
        // Always read the file: a cached response would bypass most of the request path.
        files.setCacheControl("no-store");
        HandlerList handlers = new HandlerList();
        handlers.setHandlers(new Handler[] {reports, files});
        server.setHandler(handlers);
        server.start();
        System.out.println("jetty listening on " + port);
        server.join();
    }

    /** Renders the report the query asks for. */
    public static final class ReportServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            long seed = Long.parseLong(req.getParameter("seed"));
            int rows = Math.min(10_000, Integer.parseInt(req.getParameter("rows")));
            byte[] body = Report.render(seed, rows).getBytes(StandardCharsets.UTF_8);
            resp.setContentType("text/plain; charset=utf-8");
            resp.setContentLength(body.length);
            resp.getOutputStream().write(body);
        }
    }
}
