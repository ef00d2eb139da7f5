/* A libbpf loader that shows bpflog's annotated log and explanation when the kernel rejects a
 * program, in place of the raw verifier log.
 *
 *   loader OBJ [--level 1|2]            load every program of OBJ (root, or CAP_BPF)
 *   loader OBJ --log FILE [--prog NAME] annotate an existing verifier log (no privileges)
 *
 * Exit status: 0 loaded (or the log annotated), 1 a program rejected (its log annotated),
 * 2 bad usage or input (one line on stderr). The object is closed before exit: nothing stays
 * loaded or pinned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>
#include <bpflog.h>

/* Each program's log buffer: level 2 logs of big programs run to megabytes. */
#define LOG_BUF_SIZE (16u << 20)

static int write_stdout(void *ctx, const uint8_t *buf, size_t len)
{
	(void)ctx;
	return fwrite(buf, 1, len, stdout) == len ? 0 : 1;
}

/* The annotated log (rich style), then the explanation (one JSON object per rejection). */
static int annotate(const struct bpflog_object *object, const char *prog, const char *log,
		    size_t len, const char *what)
{
	struct bpflog_error *err = NULL;

	if (bpflog_annotate(object, prog, (const uint8_t *)log, len, BPFLOG_STYLE_RICH,
			    write_stdout, NULL, &err) != BPFLOG_OK ||
	    bpflog_explain_json(object, prog, (const uint8_t *)log, len, write_stdout, NULL,
				&err) != BPFLOG_OK) {
		fprintf(stderr, "loader: %s: %s\n", what, bpflog_error_message(err));
		bpflog_error_free(err);
		return -1;
	}
	return fflush(stdout) == 0 ? 0 : -1;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data = NULL;
	size_t cap = 0, n;

	*len = 0;
	if (!f) {
		fprintf(stderr, "loader: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		if (*len == cap) {
			char *more = realloc(data, cap ? cap * 2 : 1 << 16);
			if (!more) {
				fprintf(stderr, "loader: %s: out of memory\n", path);
				free(data);
				fclose(f);
				return NULL;
			}
			data = more;
			cap = cap ? cap * 2 : 1 << 16;
		}
		n = fread(data + *len, 1, cap - *len, f);
		*len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "loader: %s: %s\n", path, strerror(errno));
		free(data);
		data = NULL;
	}
	fclose(f);
	return data;
}

static int from_log(const struct bpflog_object *object, const char *path, const char *prog)
{
	size_t len;
	char *log = read_file(path, &len);
	int ret;

	if (!log)
		return 2;
	ret = annotate(object, prog, log, len, path) ? 2 : 0;
	free(log);
	return ret;
}

static int load(const struct bpflog_object *bpflog, const char *path, unsigned level)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;
	size_t n = 0, i = 0;
	char **bufs;
	int ret = 0, err;

	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		fprintf(stderr, "loader: %s: libbpf cannot open it: %s\n", path, strerror(errno));
		return 2;
	}
	bpf_object__for_each_map(map, obj)
		bpf_map__set_pin_path(map, NULL);
	bpf_object__for_each_program(prog, obj)
		n++;
	bufs = calloc(n ? n : 1, sizeof(*bufs));
	if (!bufs) {
		fprintf(stderr, "loader: %s: out of memory\n", path);
		bpf_object__close(obj);
		return 2;
	}
	bpf_object__for_each_program(prog, obj) {
		bufs[i] = calloc(1, LOG_BUF_SIZE);
		if (!bufs[i] || bpf_program__set_log_buf(prog, bufs[i], LOG_BUF_SIZE) ||
		    bpf_program__set_log_level(prog, level)) {
			fprintf(stderr, "loader: %s: cannot give program '%s' a log buffer\n", path,
				bpf_program__name(prog));
			ret = 2;
			goto out;
		}
		i++;
	}
	err = bpf_object__load(obj);
	if (!err) {
		printf("%s: loaded\n", path);
		goto out;
	}
	ret = 1;
	i = 0;
	bpf_object__for_each_program(prog, obj) {
		const char *name = bpf_program__name(prog);
		char *log = bufs[i++];

		if (!bpf_program__autoload(prog) || bpf_program__fd(prog) >= 0 || !log[0])
			continue;
		fprintf(stderr, "loader: %s: the kernel rejected program '%s': %s\n", path, name,
			strerror(-err));
		if (annotate(bpflog, name, log, strnlen(log, LOG_BUF_SIZE), path))
			ret = 2;
	}
out:
	bpf_object__close(obj);
	for (i = 0; i < n; i++)
		free(bufs[i]);
	free(bufs);
	return ret;
}

static int usage(void)
{
	fprintf(stderr, "usage: loader OBJ [--level 1|2] | loader OBJ --log FILE [--prog NAME]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *log = NULL, *prog = NULL;
	struct bpflog_object *object;
	struct bpflog_error *err = NULL;
	unsigned level = 2;
	int i, ret;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--log") && i + 1 < argc)
			log = argv[++i];
		else if (!strcmp(argv[i], "--prog") && i + 1 < argc)
			prog = argv[++i];
		else if (!strcmp(argv[i], "--level") && i + 1 < argc &&
			 (!strcmp(argv[i + 1], "1") || !strcmp(argv[i + 1], "2")))
			level = argv[++i][0] - '0';
		else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else
			return usage();
	}
	if (!path || (prog && !log))
		return usage();
	/* The same object's bytes for bpflog: its line info and sources. */
	object = bpflog_object_open_path(path, &err);
	if (!object) {
		fprintf(stderr, "loader: %s\n", bpflog_error_message(err));
		bpflog_error_free(err);
		return 2;
	}
	ret = log ? from_log(object, log, prog) : load(object, path, level);
	bpflog_object_free(object);
	return ret;
}
