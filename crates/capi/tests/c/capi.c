/* Calls every function of bpflog.h as a C loader would, and writes what each gives to files
 * for tests/c.rs to compare with the Rust library's output for the same inputs.
 *
 * usage: capi OBJECT LOG PROG|- OUTDIR
 *   OUTDIR/programs.txt          the object's programs, one a line
 *   OUTDIR/{kernel,rich}.cb      the log annotated through the write callback
 *   OUTDIR/{kernel,rich}.buf     the same into a buffer (its size asked first)
 *   OUTDIR/rich.cilium           the log annotated with the object opened for cilium/ebpf (path)
 *   OUTDIR/kernel.aya            the same for aya (bytes)
 *   OUTDIR/explain.json, profile.json
 *   OUTDIR/errors.txt            the status and message of calls that must fail
 * Exits 0 when every call did what it should, else 1 with a line on stderr. */
#include <bpflog.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *outdir;

static FILE *out(const char *name) {
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", outdir, name);
	FILE *f = fopen(path, "wb");
	if (!f) {
		perror(path);
		exit(1);
	}
	return f;
}

static int write_file(void *ctx, const uint8_t *buf, size_t len) {
	return fwrite(buf, 1, len, (FILE *)ctx) == len ? 0 : -1;
}

static void check(bpflog_status status, bpflog_error *err, const char *what) {
	if (status != BPFLOG_OK) {
		fprintf(stderr, "%s: status %d: %s\n", what, (int)status, bpflog_error_message(err));
		exit(1);
	}
}

static uint8_t *read_all(const char *path, size_t *len) {
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	size_t cap = 1 << 16, n = 0, got;
	uint8_t *data = malloc(cap);
	while ((got = fread(data + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap)
			data = realloc(data, cap *= 2);
	}
	fclose(f);
	*len = n;
	return data;
}

/* A job through the buffer: the size asked with no buffer, then the output written. */
typedef bpflog_status (*buf_job)(const bpflog_object *, const char *, const uint8_t *, size_t,
				 uint8_t *, size_t, size_t *, bpflog_error **);

static void through_buffer(bpflog_object *obj, const char *prog, const uint8_t *log,
			   size_t log_len, uint32_t style, const char *name) {
	bpflog_error *err = NULL;
	size_t len = 0;
	bpflog_status s = bpflog_annotate_buf(obj, prog, log, log_len, style, NULL, 0, &len, &err);
	if (s != BPFLOG_ERR_BUFFER_TOO_SMALL || bpflog_error_code(err) != s) {
		fprintf(stderr, "%s: asking the size gave status %d\n", name, (int)s);
		exit(1);
	}
	bpflog_error_free(err);
	uint8_t *buf = malloc(len + 1);
	size_t needed = len;
	err = NULL;
	check(bpflog_annotate_buf(obj, prog, log, log_len, style, buf, needed, &len, &err), err,
	      name);
	if (len != needed) {
		fprintf(stderr, "%s: %zu bytes written, %zu announced\n", name, len, needed);
		exit(1);
	}
	FILE *f = out(name);
	fwrite(buf, 1, len, f);
	fclose(f);
	free(buf);
}

static int refuse(void *ctx, const uint8_t *buf, size_t len) {
	(void)ctx, (void)buf, (void)len;
	return 7;
}

int main(int argc, char **argv) {
	if (argc != 5) {
		fprintf(stderr, "usage: capi OBJECT LOG PROG|- OUTDIR\n");
		return 2;
	}
	const char *prog = strcmp(argv[3], "-") ? argv[3] : NULL;
	outdir = argv[4];
	if (bpflog_abi_version() != BPFLOG_ABI_VERSION || !*bpflog_version()) {
		fprintf(stderr, "version: ABI %u, header %d\n", bpflog_abi_version(), BPFLOG_ABI_VERSION);
		return 1;
	}

	bpflog_error *err = NULL;
	bpflog_object *obj = bpflog_object_open_path(argv[1], &err);
	if (!obj)
		check(bpflog_error_code(err), err, argv[1]);
	size_t obj_len;
	uint8_t *obj_bytes = read_all(argv[1], &obj_len);
	/* The bytes are copied: freed at once, the object from them stays usable. */
	bpflog_object *from_bytes = bpflog_object_open_bytes(obj_bytes, obj_len, &err);
	free(obj_bytes);
	if (!from_bytes)
		check(bpflog_error_code(err), err, "open_bytes");
	/* Laid out as other loaders load the programs. */
	bpflog_object *cilium = bpflog_object_open_path_loader(argv[1], BPFLOG_LOADER_CILIUM, &err);
	if (!cilium)
		check(bpflog_error_code(err), err, "open_path_loader");
	obj_bytes = read_all(argv[1], &obj_len);
	bpflog_object *aya = bpflog_object_open_bytes_loader(obj_bytes, obj_len, BPFLOG_LOADER_AYA,
							     &err);
	free(obj_bytes);
	if (!aya)
		check(bpflog_error_code(err), err, "open_bytes_loader");

	FILE *f = out("programs.txt");
	for (size_t i = 0; i < bpflog_object_program_count(obj); i++)
		fprintf(f, "%s\n", bpflog_object_program_name(obj, i));
	fclose(f);

	size_t log_len;
	uint8_t *log = read_all(argv[2], &log_len);
	const char *styles[] = {"kernel", "rich"};
	for (uint32_t style = BPFLOG_STYLE_KERNEL; style <= BPFLOG_STYLE_RICH; style++) {
		char name[32];
		snprintf(name, sizeof name, "%s.cb", styles[style]);
		f = out(name);
		check(bpflog_annotate(from_bytes, prog, log, log_len, style, write_file, f, &err), err,
		      name);
		fclose(f);
		snprintf(name, sizeof name, "%s.buf", styles[style]);
		through_buffer(obj, prog, log, log_len, style, name);
	}
	f = out("rich.cilium");
	check(bpflog_annotate(cilium, prog, log, log_len, BPFLOG_STYLE_RICH, write_file, f, &err),
	      err, "rich.cilium");
	fclose(f);
	f = out("kernel.aya");
	check(bpflog_annotate(aya, prog, log, log_len, BPFLOG_STYLE_KERNEL, write_file, f, &err),
	      err, "kernel.aya");
	fclose(f);
	f = out("explain.json");
	check(bpflog_explain_json(obj, prog, log, log_len, write_file, f, &err), err, "explain");
	fclose(f);
	f = out("profile.json");
	check(bpflog_profile_json(obj, prog, log, log_len, write_file, f, &err), err, "profile");
	fclose(f);

	/* Calls that must fail, each with its status and message. */
	f = out("errors.txt");
	bpflog_status s;
	err = NULL;
	if (bpflog_object_open_path("/nonexistent.o", &err))
		return 1;
	fprintf(f, "%d %s\n", (int)bpflog_error_code(err), bpflog_error_message(err));
	bpflog_error_free(err);
	err = NULL;
	s = bpflog_annotate(obj, "no_such_prog", log, log_len, 0, write_file, f, &err);
	fprintf(f, "%d %d %s\n", (int)s, (int)bpflog_error_code(err), bpflog_error_message(err));
	bpflog_error_free(err);
	err = NULL;
	s = bpflog_annotate(obj, prog, log, log_len, 0, refuse, NULL, &err);
	fprintf(f, "%d %s\n", (int)s, bpflog_error_message(err));
	bpflog_error_free(err);
	err = NULL;
	s = bpflog_explain_json(NULL, prog, log, log_len, write_file, f, &err);
	fprintf(f, "%d %s\n", (int)s, bpflog_error_message(err));
	bpflog_error_free(err);
	err = NULL;
	if (bpflog_object_open_path_loader(argv[1], 9, &err))
		return 1;
	fprintf(f, "%d %s\n", (int)bpflog_error_code(err), bpflog_error_message(err));
	bpflog_error_free(err);
	fclose(f);

	free(log);
	bpflog_object_free(aya);
	bpflog_object_free(cilium);
	bpflog_object_free(from_bytes);
	bpflog_object_free(obj);
	bpflog_object_free(NULL);
	bpflog_error_free(NULL);
	return 0;
}
