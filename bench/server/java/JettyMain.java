import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ResourceHandler;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/** Embedded Jetty 9 serving the static files of a directory: {@code JettyMain PORT DIR}. */
public final class JettyMain {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        Server server = new Server(new QueuedThreadPool(32, 8));
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(port);
        server.addConnector(connector);
        ResourceHandler files = new ResourceHandler();
        files.setResourceBase(args[1]);
        files.setDirectoriesListed(false);
        // Always read the file: a cached response would bypass most of the request path.
        files.setCacheControl("no-store");
        server.setHandler(files);
        server.start();
        System.out.println("jetty listening on " + port);
        server.join();
    }
}
