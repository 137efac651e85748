package mail

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	texttemplate "text/template"

	"golang.org/x/text/language"

	"github.com/userd/userd/domain"
)

// embedded is the default set of templates, the layout an override
// directory (USERD_MAIL_TEMPLATES) repeats.
//
//go:embed templates
var embedded embed.FS

// fallback is the language of a message whose recipient's languages are
// all unknown. Every set of templates has it.
var fallback = language.English

// The three files of a message, after its template name.
const (
	subjectSuffix = ".subject.txt"
	textSuffix    = ".txt"
	htmlSuffix    = ".html"
)

// templateNames are the messages every language must have, and whether
// each carries a link (the text part must then hold it alone on a line).
var templateNames = map[domain.MailTemplate]bool{
	domain.MailVerifyEmail:     true,
	domain.MailResetPassword:   true,
	domain.MailEmailSignIn:     true,
	domain.MailEmailChanged:    false,
	domain.MailPasswordChanged: false,
	domain.MailFactorAdded:     false,
	domain.MailFactorRemoved:   false,
}

// templateData is what a template sees: {{.Name}}, {{.Email}}, {{.Link}},
// {{.Code}}, {{.NewEmail}}, {{.Factor}}. docs/configuration.md documents it for the authors of an
// override directory; keep the two in step.
type templateData struct {
	// Name is the account's display name; may be empty.
	Name string
	// Email is the address the message goes to.
	Email string
	// Link is the verification, reset or sign-in link (Mail.Data["link"]).
	Link string
	// Code is the 6-digit sign-in code sent with the sign-in link
	// (Mail.Data["code"]).
	Code string
	// NewEmail is the account's new address, in the notice to the old one
	// (Mail.Data["new_email"]).
	NewEmail string
	// Factor is the kind of second factor a factor_added or
	// factor_removed notice is about (Mail.Data["factor"]): "passkey",
	// "totp", or "all" when an admin removed every one.
	Factor string
}

// sampleData fills the templates once at start: a template that names a
// field that does not exist, or misplaces the link, fails then rather
// than at the first message.
var sampleData = templateData{
	Name:     "Ada Lovelace",
	Email:    "ada@example.com",
	Link:     "https://userd.example/account/verify-email?token=SAMPLE-TOKEN",
	NewEmail: "ada.new@example.com",
	Factor:   domain.FactorPasskey,
	Code:     "123456",
}

// message is one template in one language, parsed.
type message struct {
	subject *texttemplate.Template
	text    *texttemplate.Template
	html    *htmltemplate.Template
}

// rendered is a message filled in for one recipient.
type rendered struct {
	lang    language.Tag
	subject string
	text    string
	html    string
}

// templates is every message in every language, parsed once at start;
// safe for concurrent use.
type templates struct {
	langs   []language.Tag // fallback first: the matcher's default
	matcher language.Matcher
	byLang  map[language.Tag]map[domain.MailTemplate]message
}

// loadTemplates parses the templates of dir, or the embedded ones when dir
// is empty. A directory holds one subdirectory per language, named by its
// BCP 47 tag (en, de, pt-BR), each with the three files of every message:
// <template>.subject.txt, <template>.txt and <template>.html. English is
// required; a missing file, a file that does not parse or does not render,
// and a link not alone on its line in a text part are errors naming the
// file. A message none of whose three files an override directory has
// is the embedded one, of the same language or else English: a directory
// written for an older userd keeps working when a new message is added
// (its new notices then come in the embedded words).
func loadTemplates(dir string) (*templates, error) {
	fsys, root := fs.FS(embedded), "templates"
	var builtin *templates
	if dir != "" {
		var err error
		if builtin, err = loadTemplates(""); err != nil {
			return nil, fmt.Errorf("embedded templates: %w", err)
		}
		info, err := os.Stat(dir)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", dir)
		}
		fsys, root = os.DirFS(dir), "."
	}
	entries, err := fs.ReadDir(fsys, root)
	if err != nil {
		return nil, err
	}
	t := &templates{byLang: make(map[language.Tag]map[domain.MailTemplate]message)}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		tag, err := language.Parse(e.Name())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: not a language tag (en, de, pt-BR)", displayPath(dir, e.Name())))
			continue
		}
		if _, dup := t.byLang[tag]; dup {
			errs = append(errs, fmt.Errorf("%s: a second directory for %s", displayPath(dir, e.Name()), tag))
			continue
		}
		msgs, lerrs := loadLanguage(fsys, path.Join(root, e.Name()), dir, e.Name(), builtin.messagesOf(tag))
		errs = append(errs, lerrs...)
		t.byLang[tag] = msgs
		t.langs = append(t.langs, tag)
	}
	if _, ok := t.byLang[fallback]; !ok {
		errs = append(errs, fmt.Errorf("%s: missing (English is the fallback language)", displayPath(dir, fallback.String())))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// The matcher answers its first tag when nothing matches.
	slices.SortStableFunc(t.langs, func(a, b language.Tag) int {
		switch {
		case a == fallback:
			return -1
		case b == fallback:
			return 1
		}
		return strings.Compare(a.String(), b.String())
	})
	t.matcher = language.NewMatcher(t.langs)
	return t, nil
}

// messagesOf returns the messages of the language tag, or of the
// fallback language when t has not tag; nil when t is nil.
func (t *templates) messagesOf(tag language.Tag) map[domain.MailTemplate]message {
	if t == nil {
		return nil
	}
	if msgs, ok := t.byLang[tag]; ok {
		return msgs
	}
	return t.byLang[fallback]
}

// loadLanguage parses the messages of one language directory; a message
// with none of its files there is taken from builtin, when it has it.
func loadLanguage(fsys fs.FS, langDir, dir, langName string, builtin map[domain.MailTemplate]message) (map[domain.MailTemplate]message, []error) {
	msgs := make(map[domain.MailTemplate]message, len(templateNames))
	var errs []error
	// In order, so that the errors come in the same order each time.
	for _, name := range slices.Sorted(maps.Keys(templateNames)) {
		hasLink := templateNames[name]
		base := path.Join(langDir, string(name))
		if m, ok := builtin[name]; ok && noneOf(fsys, base, subjectSuffix, textSuffix, htmlSuffix) {
			msgs[name] = m
			continue
		}
		shown := func(suffix string) string { return displayPath(dir, path.Join(langName, string(name)+suffix)) }
		read := func(suffix string) (string, bool) {
			b, err := fs.ReadFile(fsys, base+suffix)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, fmt.Errorf("%s: missing", shown(suffix)))
				} else {
					errs = append(errs, fmt.Errorf("%s: %w", shown(suffix), err))
				}
				return "", false
			}
			return string(b), true
		}
		var m message
		var ok bool
		if src, found := read(subjectSuffix); found {
			m.subject, ok = parseText(shown(subjectSuffix), src, &errs)
			if ok {
				checkSubject(m.subject, shown(subjectSuffix), &errs)
			}
		}
		if src, found := read(textSuffix); found {
			m.text, ok = parseText(shown(textSuffix), src, &errs)
			if ok {
				checkText(m.text, shown(textSuffix), hasLink, &errs)
			}
		}
		if src, found := read(htmlSuffix); found {
			m.html, ok = parseHTML(shown(htmlSuffix), src, &errs)
			if ok {
				checkHTML(m.html, &errs)
			}
		}
		msgs[name] = m
	}
	return msgs, errs
}

// noneOf reports whether fsys has no file base+suffix for any of the
// suffixes.
func noneOf(fsys fs.FS, base string, suffixes ...string) bool {
	for _, suffix := range suffixes {
		if _, err := fs.Stat(fsys, base+suffix); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

// displayPath names a template file in errors: under the override
// directory, or as the embedded file.
func displayPath(dir, rel string) string {
	if dir == "" {
		return path.Join("(embedded)", rel)
	}
	return filepath.Join(dir, filepath.FromSlash(rel))
}

func parseText(name, src string, errs *[]error) (*texttemplate.Template, bool) {
	t, err := texttemplate.New(name).Option("missingkey=error").Parse(src)
	if err != nil {
		*errs = append(*errs, err)
		return nil, false
	}
	return t, true
}

func parseHTML(name, src string, errs *[]error) (*htmltemplate.Template, bool) {
	t, err := htmltemplate.New(name).Option("missingkey=error").Parse(src)
	if err != nil {
		*errs = append(*errs, err)
		return nil, false
	}
	return t, true
}

// checkSubject renders a subject with the sample data: it must work and
// not be blank.
func checkSubject(t *texttemplate.Template, name string, errs *[]error) {
	s, err := execText(t, sampleData)
	switch {
	case err != nil:
		*errs = append(*errs, err)
	case oneLine(s) == "":
		*errs = append(*errs, fmt.Errorf("%s: the subject is empty", name))
	}
}

// checkText renders a text part with the sample data: it must work, and a
// message with a link must hold it alone on a line, where every mail
// client makes it clickable and nothing sticks to it.
func checkText(t *texttemplate.Template, name string, hasLink bool, errs *[]error) {
	s, err := execText(t, sampleData)
	switch {
	case err != nil:
		*errs = append(*errs, err)
	case hasLink && !linkAlone(s, sampleData.Link):
		*errs = append(*errs, fmt.Errorf("%s: {{.Link}} must stand alone on its own line", name))
	case !hasLink && strings.Contains(s, sampleData.Link):
		*errs = append(*errs, fmt.Errorf("%s: this message has no link", name))
	}
}

// checkHTML renders an HTML part with the sample data: it must work (its
// errors name the file, the template's name).
func checkHTML(t *htmltemplate.Template, errs *[]error) {
	var b bytes.Buffer
	if err := t.Execute(&b, sampleData); err != nil {
		*errs = append(*errs, err)
	}
}

// linkAlone says whether link is, alone, one of the lines of text.
func linkAlone(text, link string) bool {
	for line := range strings.Lines(text) {
		if strings.TrimSpace(line) == link {
			return true
		}
	}
	return false
}

func execText(t *texttemplate.Template, data templateData) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// oneLine folds a subject onto one line: a line break in a header would
// end it (the name in a subject is the user's own).
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// pick chooses the language for lang, a BCP 47 tag or a whole
// Accept-Language value: the best the templates have, English when none
// fits. A value cut short (httpapi keeps 256 bytes) loses only its last,
// broken entry.
func (t *templates) pick(lang string) language.Tag {
	prefs, _, err := language.ParseAcceptLanguage(lang)
	if err != nil {
		if i := strings.LastIndexByte(lang, ','); i >= 0 {
			prefs, _, err = language.ParseAcceptLanguage(lang[:i])
		}
		if err != nil {
			return fallback
		}
	}
	_, i, conf := t.matcher.Match(prefs...)
	if conf == language.No {
		return fallback
	}
	return t.langs[i]
}

// render fills in the message m names, in its language. An unknown
// template, or a link template without its link, can never be sent: the
// error wraps domain.ErrMailRejected.
func (t *templates) render(m domain.Mail) (rendered, error) {
	hasLink, known := templateNames[m.Template]
	if !known {
		return rendered{}, fmt.Errorf("%w: unknown template %q", domain.ErrMailRejected, m.Template)
	}
	data := templateData{Name: m.Name, Email: m.To.String(), Link: m.Data["link"], NewEmail: m.Data["new_email"],
		Factor: m.Data["factor"], Code: m.Data["code"]}
	if hasLink && data.Link == "" {
		return rendered{}, fmt.Errorf("%w: %s without a link", domain.ErrMailRejected, m.Template)
	}
	lang := t.pick(m.Lang)
	msg := t.byLang[lang][m.Template]
	r := rendered{lang: lang}
	var err error
	if r.subject, err = execText(msg.subject, data); err != nil {
		return rendered{}, fmt.Errorf("%w: render %s: %w", domain.ErrMailRejected, m.Template, err)
	}
	r.subject = oneLine(r.subject)
	if r.text, err = execText(msg.text, data); err != nil {
		return rendered{}, fmt.Errorf("%w: render %s: %w", domain.ErrMailRejected, m.Template, err)
	}
	var b strings.Builder
	if err := msg.html.Execute(&b, data); err != nil {
		return rendered{}, fmt.Errorf("%w: render %s: %w", domain.ErrMailRejected, m.Template, err)
	}
	r.html = b.String()
	return r, nil
}
