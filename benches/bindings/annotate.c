/* The C ABI's side of benches/bindings.rs: annotates a log file's bytes, read whole as a loader
 * holds its log buffer, through bpflog_annotate's write callback into a file; then prints its
 * peak memory (VmHWM, KiB) on stderr when BPFLOG_BENCH_PEAK is set.
 *
 * usage: annotate OBJ PROG LOG OUT */
#include <bpflog.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int to_file(void *ctx, const uint8_t *buf, size_t len)
{
	return fwrite(buf, 1, len, ctx) == len ? 0 : -1;
}

static void print_peak(void)
{
	char line[256];
	FILE *status = fopen("/proc/self/status", "r");

	if (!status)
		return;
	while (fgets(line, sizeof(line), status))
		if (strncmp(line, "VmHWM:", 6) == 0)
			fprintf(stderr, "peak_kib %ld\n", strtol(line + 6, NULL, 10));
	fclose(status);
}

int main(int argc, char **argv)
{
	bpflog_error *err = NULL;
	bpflog_object *obj;
	FILE *in, *out;
	char *log;
	long size;
	int rc = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: %s OBJ PROG LOG OUT\n", argv[0]);
		return 2;
	}
	in = fopen(argv[3], "rb");
	if (!in || fseek(in, 0, SEEK_END) || (size = ftell(in)) < 0 || fseek(in, 0, SEEK_SET)) {
		perror(argv[3]);
		return 1;
	}
	log = malloc(size ? size : 1);
	if (!log || fread(log, 1, size, in) != (size_t)size) {
		perror(argv[3]);
		return 1;
	}
	fclose(in);
	obj = bpflog_object_open_path(argv[1], &err);
	if (!obj) {
		fprintf(stderr, "%s\n", bpflog_error_message(err));
		return 1;
	}
	out = fopen(argv[4], "wb");
	if (!out) {
		perror(argv[4]);
		return 1;
	}
	if (bpflog_annotate(obj, argv[2], (const uint8_t *)log, size, BPFLOG_STYLE_KERNEL, to_file, out,
			    &err) != BPFLOG_OK) {
		fprintf(stderr, "%s\n", bpflog_error_message(err));
		bpflog_error_free(err);
		rc = 1;
	}
	if (fclose(out)) {
		perror(argv[4]);
		rc = 1;
	}
	bpflog_object_free(obj);
	free(log);
	if (getenv("BPFLOG_BENCH_PEAK"))
		print_peak();
	return rc;
}
