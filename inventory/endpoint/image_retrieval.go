package endpoint

// ImageRetrieval is AIPerf's image_retrieval endpoint type: a detector
// answers with the boxes it finds in one image (NIM /v1/infer).
const ImageRetrieval = "image_retrieval"

func init() { Register(imageRetrieval{}) }

type imageRetrieval struct{}

func (imageRetrieval) Name() string                    { return ImageRetrieval }
func (imageRetrieval) NeedsTokenizer() bool            { return false }
func (imageRetrieval) TakesGeneration() bool           { return false }
func (imageRetrieval) CheckEntry(string) *EntryProblem { return nil }
func (imageRetrieval) LineText(Request) string         { return "" }
func (imageRetrieval) Argv(string) []string            { return nil }
func (imageRetrieval) DefaultExtractor() string        { return "nim-bounding-boxes" }
func (imageRetrieval) Counts() Count                   { return Boxes }

// Body is {"input":[{"type":"image_url","url":...}]}; the model and the
// extra inputs are not part of it.
func (imageRetrieval) Body(r Request, _ string, _ map[string]any) ([]byte, error) {
	return CompactJSON(map[string]any{"input": []any{map[string]any{"type": "image_url", "url": r.Image}}})
}
