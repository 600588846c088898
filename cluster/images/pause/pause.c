/*
 * pause: the sandbox process of every pod in drakit's local cluster
 * (image drakit.dev/pause:dev). It holds the pod's namespaces open, reaps
 * the children that are re-parented to it and exits 0 on SIGINT or SIGTERM.
 * Built with gcc -static by drakit.dev/drakit/cluster/images.BuildPause.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
	(void)sig;
	_exit(0);
}

static void on_child(int sig) {
	int saved = errno;
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0) {
	}
	errno = saved;
}

int main(void) {
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_stop;
	if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0) {
		return 1;
	}
	sa.sa_handler = on_child;
	sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
	if (sigaction(SIGCHLD, &sa, NULL) < 0) {
		return 2;
	}
	for (;;) {
		pause();
	}
}
