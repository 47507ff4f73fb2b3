/* tun_writes N: open a tap, bring it up, write N 60-byte frames, read none. The whole
 * process's time under `skbsim exec` against a real tap is the supervisor's cost per
 * intercepted write (docs/exec.md#cost). */
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	unsigned char frame[60];
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR), sock;

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "wr0");
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0) {
		perror("tap");
		return 1;
	}
	sock = socket(AF_INET, SOCK_DGRAM, 0);
	ifr.ifr_flags = IFF_UP;
	if (ioctl(sock, SIOCSIFFLAGS, &ifr) < 0) {
		perror("up");
		return 1;
	}
	memset(frame, 0xff, 6);
	memcpy(frame + 6, "\x02\x00\x00\x00\x00\x01\x88\xb5", 8);
	memset(frame + 14, 0, sizeof(frame) - 14);
	for (long i = 0; i < n; i++) {
		if (write(fd, frame, sizeof(frame)) != sizeof(frame)) {
			perror("write");
			return 1;
		}
	}
	printf("%ld writes\n", n);
	return 0;
}
