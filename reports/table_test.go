package reports

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTableFormats(t *testing.T) {
	tbl := Table{Header: []string{"profile_id", "verdict"}, Rows: [][]string{{"a", "qualified"}, {"b\tc", "failed"}}}
	cases := map[string]string{
		FormatTSV:      "a\tqualified\nb c\tfailed\n",
		FormatCSV:      "profile_id,verdict\na,qualified\nb\tc,failed\n",
		FormatMarkdown: "| profile_id | verdict   |\n|:-----------|:----------|\n| a          | qualified |\n| b    c     | failed    |\n",
	}
	for format, want := range cases {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, tbl.Write(&buf, format))
			assert.Equal(t, want, buf.String())
		})
	}
	var buf bytes.Buffer
	require.NoError(t, tbl.Write(&buf, FormatTable))
	assert.Contains(t, buf.String(), "profile_id", "header is not auto-formatted to upper case")
	assert.Error(t, tbl.Write(&buf, "xml"))
}

func TestCheckFormat(t *testing.T) {
	assert.NoError(t, CheckFormat("md", "md", "csv"))
	err := CheckFormat("xml", "md", "csv")
	require.Error(t, err)
	assert.Equal(t, `invalid format "xml": valid values are md, csv`, err.Error())
}
