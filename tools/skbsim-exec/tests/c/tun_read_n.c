/* tun_read_n: tun_read_n DEV N [tun]: makes the tap DEV (IFF_TAP | IFF_NO_PI; with
 * "tun", IFF_TUN | IFF_NO_PI), non-blocking, brings it up (SIOCSIFFLAGS IFF_UP), then
 * reads N frames, waiting for each with poll (at most 2 s), and prints each one's
 * length, "len=N"; then one more read, which finds the queue empty ("rest=E11",
 * EAGAIN). Exits 0 when it read N frames and then found none, 1 otherwise. What the
 * far side sends when the device comes up (an exec scenario's input) is what it reads. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct ifreq ifr;
	unsigned char buf[65536];
	int n, want, fd, s;

	if (argc < 3) {
		fprintf(stderr, "usage: tun_read_n DEV N [tun]\n");
		return 2;
	}
	want = atoi(argv[2]);
	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK);
	s = socket(AF_INET, SOCK_DGRAM, 0);
	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, argv[1], IFNAMSIZ - 1);
	ifr.ifr_flags = IFF_NO_PI;
	ifr.ifr_flags |= (argc > 3 && strcmp(argv[3], "tun") == 0) ? IFF_TUN : IFF_TAP;
	if (fd < 0 || s < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0) {
		printf("tunsetiff=E%d\n", errno);
		return 1;
	}
	ifr.ifr_flags = IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
		printf("up=E%d\n", errno);
		return 1;
	}
	for (int i = 0; i < want; i++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 2000) != 1) {
			printf("frame %d: none came\n", i);
			return 1;
		}
		n = read(fd, buf, sizeof(buf));
		if (n < 0) {
			printf("read=E%d\n", errno);
			return 1;
		}
		printf("len=%d\n", n);
	}
	n = read(fd, buf, sizeof(buf));
	printf("rest=%s%d\n", n < 0 ? "E" : "", n < 0 ? errno : n);
	return n < 0 && errno == EAGAIN ? 0 : 1;
}
