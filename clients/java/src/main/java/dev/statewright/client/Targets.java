package dev.statewright.client;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.regex.Pattern;

/** What a gRPC target or authority says about where it leads, without resolving any name. */
final class Targets {
  private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");

  private Targets() {}

  /**
   * True when {@code target} ({@code host:port}, {@code [v6]:port}, {@code dns:///host:port}, a
   * {@code unix:} socket, or a bare authority) can only reach this machine: {@code localhost}, a
   * loopback address, a Unix socket. Anything it cannot tell is not loopback.
   */
  static boolean isLoopback(String target) {
    if (target == null || target.isEmpty()) {
      return false;
    }
    if (target.startsWith("unix:") || target.startsWith("unix-abstract:")) {
      return true;
    }
    String hostPort = target;
    int scheme = hostPort.indexOf("://");
    if (scheme >= 0) {
      hostPort = hostPort.substring(hostPort.lastIndexOf('/') + 1);
    }
    String host = host(hostPort);
    if (host.equalsIgnoreCase("localhost")) {
      return true;
    }
    if (!IPV4.matcher(host).matches() && !host.contains(":")) {
      return false; // a name: it could resolve anywhere
    }
    try {
      // A literal address: getByName parses it and looks nothing up.
      return InetAddress.getByName(host).isLoopbackAddress();
    } catch (UnknownHostException | SecurityException e) {
      return false;
    }
  }

  private static String host(String hostPort) {
    if (hostPort.startsWith("[")) {
      int end = hostPort.indexOf(']');
      return end < 0 ? hostPort : hostPort.substring(1, end);
    }
    int colon = hostPort.indexOf(':');
    if (colon >= 0 && hostPort.indexOf(':', colon + 1) < 0) {
      return hostPort.substring(0, colon);
    }
    return hostPort; // no port, or a bare IPv6 literal
  }
}
