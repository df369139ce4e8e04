/*
 * pause: the built-in runtime's stand-in for registry.k8s.io/pause.
 *
 * Behaves like Kubernetes' pause container (build/pause/linux/pause.c): blocks forever, exits 0 on SIGINT or
 * SIGTERM, and reaps every zombie when it runs as PID 1 of a Pod's PID namespace. `-v` prints the version.
 * Written for pykubeadm; built by scripts/setup.sh or on first use (pykubeadm.kubelet.builtin.sandbox.pause_path).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define VERSION "pykubeadm-pause-3.10"

static void on_exit_signal(int sig) {
    (void)sig;
    _exit(0);
}

static void on_child(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) {
            printf("pause.c %s\n", VERSION);
            return 0;
        }
    }
    if (getpid() != 1) {
        /* Not an error: a Pod without its own PID namespace still gets a blocking process. */
        fprintf(stderr, "Warning: pause should be the first process\n");
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_exit_signal;
    if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0) {
        return 1;
    }
    sa.sa_handler = on_child;
    sa.sa_flags = SA_NOCLDSTOP;
    if (sigaction(SIGCHLD, &sa, NULL) < 0) {
        return 2;
    }
    for (;;) {
        pause();
    }
    fprintf(stderr, "Error: infinite loop terminated\n");
    return 42;
}
