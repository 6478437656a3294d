# The model gateway's in-sandbox forwarder (embedded by agent/command.go, run with python3 -c).
#
# usage: python3 -c "$SCRIPT" SOCKET PORT [COMMAND ARG...]
#
# A sandbox has no network, only its own loopback, and agent CLIs want a TCP base URL. This
# listens on 127.0.0.1:PORT and copies each connection to the gateway's Unix socket SOCKET
# (bind-mounted into the sandbox). With a COMMAND it runs it (inheriting stdin, stdout, stderr
# and the environment; no shell) once the port is listening, and exits with its status; without
# one it serves until killed. Its own diagnostics go to stderr, prefixed "gateway-forwarder:".
import socket
import subprocess
import sys
import threading


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def handle(conn, path):
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(path)
    except OSError as e:
        print("gateway-forwarder: cannot reach the gateway at %s: %s" % (path, e), file=sys.stderr)
        conn.close()
        up.close()
        return
    back = threading.Thread(target=pipe, args=(up, conn), daemon=True)
    back.start()
    pipe(conn, up)
    back.join()
    conn.close()
    up.close()


def serve(srv, path):
    while True:
        try:
            conn, _ = srv.accept()
        except OSError:
            return
        threading.Thread(target=handle, args=(conn, path), daemon=True).start()


def main():
    if len(sys.argv) < 3:
        print("gateway-forwarder: usage: SOCKET PORT [COMMAND ARG...]", file=sys.stderr)
        return 2
    path, port, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        srv.bind(("127.0.0.1", port))
    except OSError as e:
        print("gateway-forwarder: cannot listen on 127.0.0.1:%d: %s" % (port, e), file=sys.stderr)
        return 125
    srv.listen(64)
    t = threading.Thread(target=serve, args=(srv, path), daemon=True)
    t.start()
    if not cmd:
        t.join()
        return 0
    try:
        rc = subprocess.call(cmd)
    except OSError as e:
        print("gateway-forwarder: cannot run %s: %s" % (cmd[0], e), file=sys.stderr)
        return 127
    return 128 - rc if rc < 0 else rc


if __name__ == "__main__":
    sys.exit(main())
