/* tun_lifecycle: the device's life across dup, fork and close, and (argument "blocking")
 * a blocking read in one thread woken by a write in another, epoll on the device fd.
 * One "key=value" line per step, as tun_probe. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void ret(const char *key, long r)
{
	if (r < 0)
		printf("%s=E%d\n", key, errno);
	else
		printf("%s=%ld\n", key, r);
	fflush(stdout);
}

static int tap(const char *name)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, name);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	ret("setiff", ioctl(fd, TUNSETIFF, &ifr));
	return fd;
}

static long ifflags(const char *name, short set)
{
	struct ifreq ifr;
	int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	long r;

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, name);
	if (set) {
		ifr.ifr_flags = set;
		r = ioctl(sock, SIOCSIFFLAGS, &ifr);
	} else {
		r = ioctl(sock, SIOCGIFFLAGS, &ifr);
	}
	close(sock);
	return r;
}

static int lifecycle(void)
{
	struct ifreq ifr;
	int fd = tap("life0"), fd2 = dup(fd), status;
	pid_t pid;

	ret("close_first", close(fd));
	ret("alive_after_first_close", ifflags("life0", 0));
	pid = fork();
	if (pid == 0) {
		memset(&ifr, 0, sizeof(ifr));
		ret("child_getiff", ioctl(fd2, TUNGETIFF, &ifr));
		printf("child_name=%s\n", ifr.ifr_name);
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	ret("alive_after_child", ifflags("life0", 0));
	ret("close_last", close(fd2));
	ret("gone_after_last_close", ifflags("life0", 0));
	printf("gone_errno_is_enodev=%d\n", errno == ENODEV);
	return 0;
}

static int tapfd;

static void *reader(void *arg)
{
	unsigned char buf[2048];

	(void)arg;
	ret("blocking_read", read(tapfd, buf, sizeof(buf)));
	return NULL;
}

static int blocking(void)
{
	unsigned char frame[60];
	struct epoll_event ev = { .events = EPOLLIN }, out;
	pthread_t t;
	int ep;

	tapfd = tap("blk0");
	ret("up", ifflags("blk0", IFF_UP));
	ep = epoll_create1(EPOLL_CLOEXEC);
	ret("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, tapfd, &ev));
	ret("epoll_before", epoll_wait(ep, &out, 1, 0));
	pthread_create(&t, NULL, reader, NULL);
	usleep(100000);
	memset(frame, 0xff, sizeof(frame));
	ret("write", write(tapfd, frame, sizeof(frame)));
	pthread_join(t, NULL);
	ret("write2", write(tapfd, frame, 42));
	ret("epoll_after_write", epoll_wait(ep, &out, 1, 1000));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && strcmp(argv[1], "blocking") == 0)
		return blocking();
	return lifecycle();
}
