package driver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"drakit.dev/drakit/reference/plaindriver"
)

// The verdict matrix's exit codes of drakit conformance (its contract) and
// their verdicts.
var matrixVerdicts = map[int]string{0: "Conformant", 1: "Not conformant", 2: "usage error", 3: "Could not certify"}

// README markers the matrix table goes between.
const (
	matrixBegin = "<!-- matrix:begin -->"
	matrixEnd   = "<!-- matrix:end -->"
)

// newMatrixCommand is drakit driver matrix: what
// scripts/verdict-matrix.sh needs of plaindriver.Matrix.
func newMatrixCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "matrix",
		Short: "The verdict matrix of the plain driver's correct styles and defects (scripts/verdict-matrix.sh)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "Print the matrix, one variant a line: name, kind, style, defect, nodes, node access, tags, finding, kit flags, separated by the unit separator (0x1f, which keeps empty fields in bash's read)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeMatrixList(cmd.OutOrStdout())
		},
	})
	dir := "docs/examples/matrix"
	decl := &cobra.Command{
		Use:   "declaration VARIANT",
		Short: "Print the variant's declaration: its style's, renamed for the variant",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := matrixVariant(args[0])
			if err != nil {
				return err
			}
			data, err := os.ReadFile(filepath.Join(dir, v.DeclarationFile()))
			if err != nil {
				return fmt.Errorf("read the declaration of style %s: %w", v.Style, err)
			}
			_, err = cmd.OutOrStdout().Write(v.Declaration(data))
			return err
		},
	}
	decl.Flags().StringVar(&dir, "dir", dir, "directory of the styles' declarations")
	cmd.AddCommand(decl)
	var results, readme string
	table := &cobra.Command{
		Use:   "table",
		Short: "Judge the matrix's runs, write <results>/table.md and, with --readme, put it between the README's matrix markers; exits 1 when a verdict is not the expected one",
		Long: `Reads <results>/<variant>/exit-code (drakit conformance's exit status) and
<results>/<variant>/summary.txt of every variant; a variant without exit-code
did not run (its reason in <results>/<variant>/not-run, if any). A correct
style must exit 0 (Conformant); a defect must exit 1 (Not conformant) with its
finding in summary.txt. Writes <results>/table.md, rows and the totals
(sensitivity: defects caught / defects run; specificity: styles passed / styles
run), and with --readme replaces what is between ` + matrixBegin + ` and
` + matrixEnd + ` with it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, err := judgeMatrix(results)
			if err != nil {
				return err
			}
			md := matrixTable(rows)
			if err := os.WriteFile(filepath.Join(results, "table.md"), []byte(md), 0o644); err != nil {
				return fmt.Errorf("write the matrix table: %w", err)
			}
			if readme != "" {
				if err := spliceReadme(readme, md); err != nil {
					return err
				}
			}
			fmt.Fprint(cmd.OutOrStdout(), md)
			for _, r := range rows {
				if r.ran && !r.ok {
					return errors.New("the verdict matrix has unexpected verdicts (see the table)")
				}
			}
			return nil
		},
	}
	table.Flags().StringVar(&results, "results", "artifacts/matrix", "directory of the variants' runs")
	table.Flags().StringVar(&readme, "readme", "", "README to put the table into, between its matrix markers")
	cmd.AddCommand(table)
	return cmd
}

func matrixVariant(name string) (plaindriver.Variant, error) {
	for _, v := range plaindriver.Matrix() {
		if v.Name == name {
			return v, nil
		}
	}
	return plaindriver.Variant{}, fmt.Errorf("no variant %q in the matrix (drakit driver matrix list)", name)
}

// matrixSeparator separates the fields of matrix list: the ASCII unit
// separator, in no field, and not whitespace to bash's read.
const matrixSeparator = "\x1f"

func writeMatrixList(w io.Writer) error {
	for _, v := range plaindriver.Matrix() {
		nodes := max(v.Nodes, 1)
		access := "no"
		if v.NodeAccess {
			access = "yes"
		}
		fields := []string{v.Name, v.Kind(), string(v.Style), string(v.Defect), strconv.Itoa(nodes), access, v.Tags, v.Finding, strings.Join(v.KitFlags, " ")}
		if _, err := fmt.Fprintln(w, strings.Join(fields, matrixSeparator)); err != nil {
			return err
		}
	}
	return nil
}

// matrixRow is one variant's outcome.
type matrixRow struct {
	v        plaindriver.Variant
	ran, ok  bool
	expected string
	got      string
	finding  string
}

// judgeMatrix reads every variant's run below dir.
func judgeMatrix(dir string) ([]matrixRow, error) {
	var rows []matrixRow
	for _, v := range plaindriver.Matrix() {
		r := matrixRow{v: v, expected: matrixVerdicts[0]}
		if v.Defect != "" {
			r.expected = matrixVerdicts[1]
		}
		vdir := filepath.Join(dir, v.Name)
		data, err := os.ReadFile(filepath.Join(vdir, "exit-code"))
		if errors.Is(err, os.ErrNotExist) {
			reason, _ := os.ReadFile(filepath.Join(vdir, "not-run"))
			r.got, r.finding = "not run", strings.TrimSpace(string(reason))
			rows = append(rows, r)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the exit code of variant %s: %w", v.Name, err)
		}
		code, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			return nil, fmt.Errorf("variant %s: exit-code %q is not a number", v.Name, strings.TrimSpace(string(data)))
		}
		r.ran = true
		r.got = matrixVerdicts[code]
		if r.got == "" {
			r.got = "exit " + strconv.Itoa(code)
		}
		summary, _ := os.ReadFile(filepath.Join(vdir, "summary.txt"))
		r.ok = r.got == r.expected
		if v.Defect != "" {
			line := findingLine(summary, v.Finding)
			if line == "" {
				r.ok = false
				r.finding = fmt.Sprintf("no finding with %q in summary.txt", v.Finding)
			} else {
				r.finding = line
			}
		} else if r.ok {
			r.finding = "—"
		} else {
			r.finding = lastLine(summary)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// findingLine is the first line of summary containing finding, trimmed
// and cut to a table cell's length; "" for none.
func findingLine(summary []byte, finding string) string {
	sc := bufio.NewScanner(bytes.NewReader(summary))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), finding) {
			return cell(sc.Text())
		}
	}
	return ""
}

func lastLine(summary []byte) string {
	lines := strings.Split(strings.TrimSpace(string(summary)), "\n")
	return cell(lines[len(lines)-1])
}

// cell makes s one table cell: trimmed, pipes escaped, at most 200
// characters.
func cell(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "|", `\|`)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:199]) + "…"
	}
	return s
}

// matrixTable is the Markdown table of rows with the totals.
func matrixTable(rows []matrixRow) string {
	var b strings.Builder
	caught, defects, passed, styles := 0, 0, 0, 0
	b.WriteString("| variant | kind | expected | got | finding |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		mark := ""
		switch {
		case !r.ran:
			mark = " (not counted)"
		case r.v.Defect != "":
			defects++
			if r.ok {
				caught++
			}
		default:
			styles++
			if r.ok {
				passed++
			}
		}
		if r.ran && !r.ok {
			mark = " ✗"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s%s | %s |\n", r.v.Name, r.v.Kind(), r.expected, r.got, mark, r.finding)
	}
	fmt.Fprintf(&b, "\nDefects caught: %d / %d (sensitivity). Correct styles passed: %d / %d (specificity).\n", caught, defects, passed, styles)
	return b.String()
}

// spliceReadme replaces what is between the matrix markers of the README
// at path with md.
func spliceReadme(path, md string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	s := string(data)
	begin, end := strings.Index(s, matrixBegin), strings.Index(s, matrixEnd)
	if begin < 0 || end < begin {
		return fmt.Errorf("%s has no %s … %s markers", path, matrixBegin, matrixEnd)
	}
	out := s[:begin+len(matrixBegin)] + "\n" + md + s[end:]
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
