package families

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

func TestShippedFamiliesLoad(t *testing.T) {
	cfg, err := Load("families.yaml")
	require.NoError(t, err)
	assert.Equal(t, []string{"ref-detect", "ref-vlm", "ref-vlm-gpu"}, cfg.Names())
	f := cfg.Families["ref-vlm"]
	assert.Equal(t, "chat", f.EndpointType)
	assert.Equal(t, 8, f.Line)
	assert.False(t, f.NeedsGPU)
	g := cfg.Families["ref-vlm-gpu"]
	assert.True(t, g.NeedsGPU, "the GPU family never runs on a CPU slot")
	assert.Contains(t, g.Server, "{families_dir}/reference-target/gpu/run.py")
}

func TestParseReportsEveryProblem(t *testing.T) {
	doc := `schema: trtmc-qual/families/v1
families:
  broken:
    endpoint_type: grpc
    route: v1/infer
    server: ["{bin}/srv", "{nope}"]
    extractor: magic
    comparator: fuzzy
`
	_, err := Parse("fam.yaml", []byte(doc))
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"fam.yaml:3: families.broken.endpoint_type: must be chat or image_retrieval",
		"fam.yaml:3: families.broken.route: must be an absolute path",
		"fam.yaml:6: families.broken.server[1]: unknown placeholder {nope}",
		"fam.yaml:3: families.broken.extractor: unknown extractor \"magic\"",
		"fam.yaml:3: families.broken.comparator: unknown comparator \"fuzzy\"",
		"fam.yaml:3: families.broken.readiness: missing url template",
		"fam.yaml:3: families.broken.native: missing argv",
	} {
		assert.Contains(t, msg, want)
	}
}

func TestParseRejectsUnknownFieldsWithLine(t *testing.T) {
	doc := "schema: trtmc-qual/families/v1\nfamilies:\n  a:\n    servr: [x]\n"
	_, err := Parse("f.yaml", []byte(doc))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "f.yaml:4: field servr not found")
}

func TestExpandKeepsArgumentsWhole(t *testing.T) {
	argv, err := Expand([]string{"{bin}/srv", "--name", "{model}", "x{port}y"},
		map[string]string{"bin": "/b", "model": "a b; rm -rf / $(x) `y`", "port": "80"})
	require.NoError(t, err)
	assert.Equal(t, []string{"/b/srv", "--name", "a b; rm -rf / $(x) `y`", "x80y"}, argv)
	_, err = Expand([]string{"{records}"}, map[string]string{})
	assert.ErrorContains(t, err, "placeholder {records} has no value")
}

// Issue 13, finding 6: `inventory validate` accepted family argv that
// cannot run, and `run` then failed with exit 3 and no file:line. Each is
// now a problem at the element's own line.
func TestParseRejectsArgvThatCannotRun(t *testing.T) {
	doc := `schema: trtmc-qual/families/v1
families:
  broken:
    task: t
    endpoint_type: chat
    route: /v1/chat/completions
    server: ["{BIN}/trtmc-refserver", "serve", "{Bundle}", "${PATH}", "{HOME}"]
    readiness: "{host}:{port}/health"
    correctness: ["", "check"]
    native: ["sh -c 'trtmc-refserver native --bundle {bundle}'"]
    prepare:
      bundle: ["make", "bundle\u0000x"]
    extractor: openai-chat-text
    comparator: exact
    env: {"A=B": x}
`
	_, err := Parse("fam.yaml", []byte(doc))
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"fam.yaml:7: families.broken.server[0]: placeholder {BIN} must be lower case: {bin}",
		"fam.yaml:7: families.broken.server[2]: placeholder {Bundle} must be lower case: {bundle}",
		`fam.yaml:8: families.broken.readiness: must be an http:// or https:// URL template, got "{host}:{port}/health"`,
		"fam.yaml:9: families.broken.correctness[0]: is empty: argv[0] names the program to run",
		`fam.yaml:10: families.broken.native[0]: "sh -c 'trtmc-refserver native --bundle {bundle}'" holds whitespace: argv is a list`,
		"fam.yaml:12: families.broken.prepare.bundle[1]: holds a NUL byte",
		`fam.yaml:15: families.broken.env: "A=B" is not an environment variable name`,
	} {
		assert.Contains(t, msg, want)
	}
	assert.Equal(t, 7, strings.Count(msg, "\n")+1, msg)
}

// The TRTMC families: every vlm family of TRTMC main and the detectors the
// sources name, each calling the harness's own adapters, with the family's
// label space and tolerance, never a fake.
func TestTRTMCFamiliesLoad(t *testing.T) {
	cfg, err := Load("trtmc.yaml")
	require.NoError(t, err)
	vlm := []string{"deepseek_ocr", "internvl", "lance", "locateanything", "phi4_multimodal", "qwen_vl"}
	det := []string{"deformable_detr", "detr", "rt_detr", "yolo11", "yolos", "yolov10", "yolov5", "yolov8"}
	assert.ElementsMatch(t, append(append([]string{}, vlm...), det...), cfg.Names())
	vars := map[string]string{}
	for _, p := range Placeholders {
		vars[p] = "<" + p + ">"
	}
	for _, name := range cfg.Names() {
		f := cfg.Families[name]
		server, err := Expand(f.Server, vars)
		require.NoError(t, err, name)
		assert.Equal(t, "trtmc-server", server[0], name)
		assert.Contains(t, server, "--records", name)
		for what, argv := range map[string][]string{"correctness": f.Correctness, "native": f.Native, "prepare.bundle": f.Prepare.Bundle} {
			got, err := Expand(argv, vars)
			require.NoError(t, err, name)
			assert.Equal(t, []string{"<self>", "adapter"}, got[:2], "%s.%s calls the harness's adapter", name, what)
			assert.NotContains(t, strings.Join(got, " "), "fake", name)
		}
		assert.NotZero(t, f.Timeouts.Startup.Duration, name)
		assert.GreaterOrEqual(t, f.Timeouts.Startup.Duration, 15*time.Minute, "%s: real engines load slowly", name)
		assert.NotEmpty(t, f.Preprocessing, name)
		assert.NotEmpty(t, f.Executables, name)
		// The server's limit raised to what an original photo needs, and
		// passed to it: trtmc-server's default is 1 MiB.
		assert.EqualValues(t, 15<<20, f.MaxBodyBytes, name)
		assert.Equal(t, "<max_body_bytes>", server[slices.Index(server, "--max-body-bytes")+1], name)
		// The second limit (the prompt, default 256 KiB) raised as far.
		assert.EqualValues(t, 15<<20, f.MaxPromptBytes, name)
		assert.Equal(t, "<max_prompt_bytes>", server[slices.Index(server, "--max-prompt-bytes")+1], name)
		// The worker is located, never named as trtmc-server on PATH.
		assert.NotContains(t, f.Native, "--trtmc-server", name)
	}
	for _, name := range vlm {
		f := cfg.Families[name]
		assert.Equal(t, "chat", f.EndpointType, name)
		assert.Equal(t, verdict.FinishNullComplete, f.FinishReasonNull, name)
		assert.Contains(t, f.Correctness, "tests/e2e/models/"+name+"/test_"+name+"_e2e.py", name)
		assert.Contains(t, f.Inventory.Controls, "max_tokens", name)
		assert.Equal(t, "../tokenizers/{profile}", f.Inventory.Tokenizer, name)
		// The chat routes are recorded: the served request's own Task time
		// is the record's model_call_ms.
		assert.Equal(t, verdict.TaskTimeServer, f.TaskTimeSource(), name)
		assert.True(t, f.Recorded(), name)
	}
	for _, name := range det {
		f := cfg.Families[name]
		assert.Equal(t, "image_retrieval", f.EndpointType, name)
		assert.Len(t, f.Labels, 80, name)
		if f.Comparator == "boxes-iou" {
			assert.Positive(t, f.MinBoxIoU, name)
			assert.Positive(t, f.MaxScoreAbsError, name)
		} else {
			assert.Equal(t, "boxes-tolerance", f.Comparator, name)
			assert.Positive(t, f.Tolerance, name)
		}
		// /v1/infer is not recorded by the public server: declared.
		assert.False(t, f.Recorded(), name)
		assert.Equal(t, verdict.TaskTimeNative, f.TaskTimeSource(), name)
	}
	assert.Equal(t, LabelSpaces["coco-category-id"], cfg.Families["detr"].Labels, "DETR keeps COCO category ids")
	assert.Equal(t, LabelSpaces["coco-contiguous-80"], cfg.Families["yolo11"].Labels)
	assert.Contains(t, cfg.Families["yolo11"].Native, "0.25")
	// Every tolerance by its meaning (the families' benchmark profiles,
	// idx@05c79a3a): YOLO's 0.005 is a score tolerance beside min_box_iou
	// 0.9; DETR's are min_box_iou 0.5 and max_score_abs_error 0.05.
	for _, y := range []string{"yolo11", "yolov5", "yolov8", "yolov10"} {
		assert.Equal(t, [3]any{"boxes-iou", 0.9, 0.005}, [3]any{cfg.Families[y].Comparator, cfg.Families[y].MinBoxIoU, cfg.Families[y].MaxScoreAbsError}, y)
	}
	d := cfg.Families["detr"]
	assert.Equal(t, [3]any{"boxes-iou", 0.5, 0.05}, [3]any{d.Comparator, d.MinBoxIoU, d.MaxScoreAbsError})
	assert.Contains(t, d.Preprocessing, "fp16 bundle built at 796x1333 (families/detr/tests/manifests/detr-resnet-50.json idx@481eb058",
		"the later DETR manifest, as the inventory pins it")
	assert.Contains(t, cfg.Families["detr"].Native, "0.5")
}

// The TRTMC contract settings are checked when the file is read, each
// problem at its line: a body limit declared but not passed to the server
// (it would keep its 1 MiB default) or passed but not declared, an
// unknown server_records, an unrecorded route whose Task time would come
// from records that do not exist, a negative agreement tolerance.
func TestParseChecksTheServerContract(t *testing.T) {
	base := func(server, extra string) string {
		return `schema: trtmc-qual/families/v1
families:
  f:
    task: object_detection
    endpoint_type: image_retrieval
    route: /v1/infer
    server: ` + server + `
    readiness: "http://{host}:{port}/health/ready"
    native: ["{self}", "adapter", "native"]
    extractor: nim-bounding-boxes
    comparator: exact
` + extra
	}
	for name, tt := range map[string]struct{ doc, want string }{
		"declared, not passed": {base(`["trtmc-server", "{bundle}"]`, "    max_body_bytes: 1024\n"),
			"fam.yaml:12: families.f.max_body_bytes: is declared but the server argv does not pass {max_body_bytes}"},
		"passed, not declared": {base(`["trtmc-server", "--max-body-bytes", "{max_body_bytes}"]`, ""),
			"families.f.server: passes {max_body_bytes} but the family declares no max_body_bytes"},
		"prompt limit declared, not passed": {base(`["trtmc-server", "{bundle}"]`, "    max_prompt_bytes: 1024\n"),
			"fam.yaml:12: families.f.max_prompt_bytes: is declared but the server argv does not pass {max_prompt_bytes}"},
		"prompt limit passed, not declared": {base(`["trtmc-server", "--max-prompt-bytes", "{max_prompt_bytes}"]`, ""),
			"families.f.server: passes {max_prompt_bytes} but the family declares no max_prompt_bytes"},
		"unknown server_records": {base(`["s"]`, "    server_records: sometimes\n"),
			`fam.yaml:12: families.f.server_records: must be required or none, got "sometimes"`},
		"unrecorded, Task time from records": {base(`["s"]`, "    server_records: none\n"),
			"families.f.server_records: none needs task_time: native"},
		"negative tolerance": {base(`["s"]`, "    task_agreement: {abs_ms: -1, rel: 0.1}\n"),
			"families.f.task_agreement: abs_ms and rel must be >= 0"},
	} {
		_, err := Parse("fam.yaml", []byte(tt.doc))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tt.want, name)
	}
	cfg, err := Parse("fam.yaml", []byte(base(`["s", "--max-body-bytes", "{max_body_bytes}", "--max-prompt-bytes", "{max_prompt_bytes}"]`,
		"    max_body_bytes: 1024\n    max_prompt_bytes: 512\n    server_records: none\n    task_time: native\n")))
	require.NoError(t, err)
	f := cfg.Families["f"]
	assert.False(t, f.Recorded())
	assert.EqualValues(t, 1024, f.MaxBodyBytes)
	assert.EqualValues(t, 512, f.MaxPromptBytes)
	assert.Equal(t, verdict.DefaultTaskAgreement, f.Agreement())
}

// TestFamilyCheckLines: a problem is reported at its element's line, else
// at its key's, else at the family's.
func TestFamilyCheckLines(t *testing.T) {
	c := &familyCheck{f: &Family{Name: "f", Line: 3}, lines: map[string]int{
		"f.server": 5, "f.server[1]": 7, "f.env": 9, "f.min_box_iou": 11,
	}}
	assert.Equal(t, 7, c.at("server[1]"), "the element's own line")
	assert.Equal(t, 5, c.at("server[4]"), "an element without a line: its key's")
	assert.Equal(t, 9, c.at("env.NAME"), "a map entry without a line: its map's")
	assert.Equal(t, 3, c.at("readiness"), "a key without a line: the family's")
	assert.Equal(t, 11, c.keyAt("min_box_iou"))
	assert.Equal(t, 3, c.keyAt("env.NAME"), "keyAt looks up the key only, not its parent")
}
