//! Planted secrets in real formats: each case asserts that every secret is gone *and* that the
//! context a reader needs survives, and that sanitizing the output again changes nothing.

use cdp_sanitize::Sanitizer;

struct Case {
    /// What the case is (printed on failure).
    what: &'static str,
    input: &'static str,
    /// Substrings that must not survive.
    gone: &'static [&'static str],
    /// Substrings that must survive.
    kept: &'static [&'static str],
}

const PAGE_ID: &str = "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1";
const BROWSER_ID: &str = "3c8f9c3e-8a6b-4b5e-9f21-2d5b7f0e1a44";

const CASES: &[Case] = &[
    // --- JSON Web Tokens ------------------------------------------------------------------
    Case {
        what: "HS256 JWT in a console line",
        input: "Token refreshed: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c (expires in 3600s)",
        gone: &["eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ", "SflKxwRJSMeKKF2QT4fw"],
        kept: &["Token refreshed: [redacted:jwt]", "(expires in 3600s)"],
    },
    Case {
        what: "RS256 JWT with kid, in an Authorization header",
        input: "authorization: Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6IjFlOWdkazcifQ.ewogImlzcyI6ICJodHRwOi8vc2VydmVyLmV4YW1wbGUuY29tIiwKICJzdWIiOiAiMjQ4Mjg5NzYxMDAxIgp9.rHQjEmBqn9Jre0OLykYNnspA10Qql2rvx4FsD00jwlB0Sym4NzpgvPKsDjn_wMkHxcp6CilPcoKrWHcipR2iAjzLvDNAReF97zoJqq880ZD1bwY82JDauCXELVR9O6_B0w3K-E7yM2macAAgNCUwtik6SjoSUZRcf-O5lygIyLENx882p6MtmwaL1hd6qn5RZOQ0TLrOYu0532g9Exxcm-ChymrB4xLykpDj3lUivJt63eEGGN6DH5K6o33TcxkIjNrCD4XB1CKKumZvCedgHHF3IAK4dVEDSUoGlH9z4pP_eWYNXvqQOjGs-rDaQzUHl6cQQWNiDpWOl_lxXjQEvQ",
        gone: &["rHQjEmBqn9Jre0OLykYN", "ewogImlzcyI6ICJodHRwOi8v"],
        kept: &["authorization: Bearer [redacted:authorization]"],
    },
    Case {
        what: "unsigned alg:none JWT",
        input: "accepted unsigned eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhZG1pbiIsInJvbGUiOiJhZG1pbiJ9. from client",
        gone: &["eyJzdWIiOiJhZG1pbiIsInJvbGUiOiJhZG1pbiJ9"],
        kept: &["accepted unsigned [redacted:jwt] from client"],
    },
    Case {
        what: "5-part JWE (RFC 7516 A.1)",
        input: "JWE: eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ.OKOawDo13gRp2ojaHV7LFpZcgV7T6DVZKTyKOMTYUmKoTCVJRgckCL9kiMT03JGeipsEdY3mx_etLbbWSrFr05kLzcSr4qKAq7YN7e9jwQRb23nfa6c9d-StnImGyFDbSv04uVuxIp5Zms1gNxKKK2Da14B8S4rzVRltdYwam_lDp5XnZAYpQdb76FdIKLaVmqgfwX7XWRxv2322i-vDxRfqNzo_tETKzpVLzfiwQyeyPGLBIO56YJ7eObdv0je81860ppamavo35UgoRdbYaBcoh9QcfylQr66oc6vFWXRcZ_ZT2LawVCWTIy3brGPi6UklfCpIMfIjf7iGdXKHzg.48V1_ALb6US04U3b.5eym8TW_c8SuK0ltJ3rpYIzOeDQz7TALvtu6UG9oMo4vpzs9tX_EFShS8iB7j6jiSdiwkIr3ajwQzaBtQD_A.XFBoMYUZodetZdvTiFvSkQ end",
        gone: &["OKOawDo13gRp2oj", "48V1_ALb6US04U3b", "5eym8TW_c8SuK0lt", "XFBoMYUZodetZdvTiFvSkQ"],
        kept: &["JWE: [redacted:jwt] end"],
    },
    Case {
        what: "JWT with a pretty-printed (ewo…) header",
        input: "id ewogICJhbGciOiAiSFMyNTYiLAogICJ0eXAiOiAiSldUIgp9.ewogICJzdWIiOiAiYWxpY2UiCn0.c2lnbmF0dXJlLWJ5dGVz seen",
        gone: &["ewogICJzdWIiOiAiYWxpY2UiCn0", "c2lnbmF0dXJlLWJ5dGVz"],
        kept: &["id [redacted:jwt] seen"],
    },
    Case {
        what: "JWT in an OIDC implicit-flow fragment",
        input: "navigated to https://app.example.com/cb#id_token=eyJhbGciOiJSUzI1NiJ9.eyJub25jZSI6Im4tMFM2X1d6QTJNaiJ9.sig-bytes_123&state=af0ifjsldkj",
        gone: &["eyJub25jZSI6Im4tMFM2X1d6QTJNaiJ9", "af0ifjsldkj"],
        kept: &["navigated to https://app.example.com/cb#id_token=[redacted:token]"],
    },
    Case {
        what: "JWT inside a logged localStorage JSON",
        input: r#"localStorage["auth"] = {"user":{"name":"Ada"},"accessToken":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZGEifQ.d2hhdGV2ZXI","expiresAt":1717171717}"#,
        gone: &["eyJzdWIiOiJhZGEifQ", "d2hhdGV2ZXI"],
        kept: &[r#""name":"Ada""#, r#""expiresAt":1717171717"#, r#""accessToken":"[redacted:token]""#],
    },
    // --- Cookies ---------------------------------------------------------------------------
    Case {
        what: "Cookie header as sent to github.com",
        input: "Cookie: _octo=GH1.1.123456789.1700000000; logged_in=yes; _gh_sess=abcDEF%2Bghi; user_session=Xy7_kP9qLm2wq; tz=Europe%2FBerlin\nAccept: text/html",
        gone: &["Xy7_kP9qLm2wq", "abcDEF%2Bghi", "GH1.1.123456789"],
        kept: &["Cookie: [redacted:cookie]\nAccept: text/html"],
    },
    Case {
        what: "Set-Cookie from google.com",
        input: "set-cookie: NID=511=Abc123XyZ_-qwerty; expires=Sat, 01-Jun-2024 12:00:00 GMT; path=/; domain=.google.com; HttpOnly",
        gone: &["511=Abc123XyZ_-qwerty"],
        kept: &["set-cookie: [redacted:cookie]"],
    },
    Case {
        what: "PHP session cookie",
        input: "PHPSESSID=el4ukv0kqbvoirg7nkp4dncpk3; path=/",
        gone: &["el4ukv0kqbvoirg7nkp4dncpk3"],
        kept: &["PHPSESSID=[redacted:session]; path=/"],
    },
    Case {
        what: "JSESSIONID as a path parameter",
        input: "GET https://shop.example.com/cart;jsessionid=1A530637289A03B07199A44E8D531427?item=5 200",
        gone: &["1A530637289A03B07199A44E8D531427"],
        kept: &["https://shop.example.com/cart;jsessionid=[redacted:session]", "item=5 200"],
    },
    Case {
        what: "Express connect.sid",
        input: "connect.sid=s%3AoZ1c4Z1-Z9fXhHc6s0Tq6N5g8VYhRk2W.2mN4%2FJ5m9zJQ1f7xkR4Gq1LxG9bV8uY2Q0b3uHk%2B0; Path=/; HttpOnly",
        gone: &["oZ1c4Z1-Z9fXhHc6s0Tq6N5g8VYhRk2W"],
        kept: &["connect.sid=[redacted:session]; Path=/; HttpOnly"],
    },
    Case {
        what: "Django session and CSRF cookies",
        input: "sessionid=q7k2m9x4w1z8v5b3n6c0; csrftoken=Wk3Lp8Qz2Xv7Rt5Yu9Io1Pa4Sd6Fg0Hj; django_language=en",
        gone: &["q7k2m9x4w1z8v5b3n6c0", "Wk3Lp8Qz2Xv7Rt5Yu9Io1Pa4Sd6Fg0Hj"],
        kept: &["sessionid=[redacted:session]", "csrftoken=[redacted:csrf]", "django_language=en"],
    },
    Case {
        what: "document.cookie printed in the console",
        input: r#"> document.cookie
"_ga=GA1.1.1234567.1700000000; theme=dark; auth_token=abcd1234efgh5678""#,
        gone: &["abcd1234efgh5678"],
        kept: &["theme=dark", "auth_token=[redacted:token]"],
    },
    Case {
        what: "Rails session cookie",
        input: "_myapp_session=BAh7CEkiD3Nlc3Npb25faWQGOgZFVEkiRTdl--3a1c2b4d5e; path=/",
        gone: &["BAh7CEkiD3Nlc3Npb25faWQGOgZFVEkiRTdl"],
        kept: &["_myapp_session=[redacted:session]; path=/"],
    },
    Case {
        what: "ASP.NET session cookie",
        input: "ASP.NET_SessionId=ykgztpcsfkuyq0bdrpjwcr55; path=/; HttpOnly; SameSite=Lax",
        gone: &["ykgztpcsfkuyq0bdrpjwcr55"],
        kept: &["ASP.NET_SessionId=[redacted:session]; path=/"],
    },
    Case {
        what: "CDP Network.getCookies result printed as text",
        input: r#"{"cookies":[{"name":"SID","value":"g.a000kAhLz9Qm_2Vx","domain":".google.com","path":"/","httpOnly":true}]}"#,
        gone: &["g.a000kAhLz9Qm_2Vx"],
        kept: &[r#""name":"SID","value":"[redacted:session]","domain":".google.com""#],
    },
    Case {
        what: "HAR header entry printed as text",
        input: r#"{"name": "Cookie", "value": "sessionid=abc123; theme=dark"}, {"name": "Accept", "value": "*/*"}"#,
        gone: &["abc123"],
        kept: &[r#"{"name": "Cookie", "value": "[redacted:cookie]"}"#, r#"{"name": "Accept", "value": "*/*"}"#],
    },
    Case {
        what: "cookie header inside a JSON log",
        input: r#"{"level":"debug","headers":{"cookie":"sid=7f3k2j1h; theme=dark","user-agent":"Mozilla/5.0"}}"#,
        gone: &["7f3k2j1h"],
        kept: &[r#""cookie":"[redacted:cookie]""#, r#""user-agent":"Mozilla/5.0""#],
    },
    // --- Authorization ---------------------------------------------------------------------
    Case {
        what: "Basic credentials (RFC 7617 example)",
        input: "Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l",
        gone: &["YWxhZGRpbjpvcGVuc2VzYW1l"],
        kept: &["Authorization: Basic [redacted:authorization]"],
    },
    Case {
        what: "Proxy-Authorization",
        input: "Proxy-Authorization: Basic dXNlcjpwYXNzd29yZA==\r\nHost: example.com",
        gone: &["dXNlcjpwYXNzd29yZA=="],
        kept: &["Proxy-Authorization: Basic [redacted:authorization]\r\nHost: example.com"],
    },
    Case {
        what: "curl command line with a quoted header",
        input: r#"curl -H "Authorization: Bearer ya29.a0AfH6SMBx3kQ_Zt8" https://www.googleapis.com/drive/v3/files"#,
        gone: &["ya29.a0AfH6SMBx3kQ_Zt8"],
        kept: &[r#"-H "Authorization: Bearer [redacted:authorization]" https://www.googleapis.com/drive/v3/files"#],
    },
    Case {
        what: "fetch() call logged with a JS object",
        input: r#"fetch("https://api.example.com/me", {headers: {Authorization: "Bearer tok_9f8e7d6c5b4a"}})"#,
        gone: &["tok_9f8e7d6c5b4a"],
        kept: &[r#"fetch("https://api.example.com/me", {headers: {Authorization: "Bearer [redacted:authorization]"}})"#],
    },
    Case {
        what: "X-Api-Key header",
        input: "X-Api-Key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        gone: &["9f8e7d6c5b4a39281706f5e4d3c2b1a0"],
        kept: &["X-Api-Key: [redacted:api-key]"],
    },
    Case {
        what: "bearer token in prose",
        input: "retrying with Bearer gho_16C7e42F292c6912E7710c838347Ae178B4a after 401",
        gone: &["gho_16C7e42F292c6912E7710c838347Ae178B4a"],
        kept: &["retrying with Bearer [redacted:bearer] after 401"],
    },
    Case {
        what: "GitHub-style token scheme",
        input: "Authorization: token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
        gone: &["ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"],
        kept: &["Authorization: token [redacted:authorization]"],
    },
    Case {
        what: "Digest authorization (RFC 2617 example)",
        input: r#"Authorization: Digest username="Mufasa", realm="testrealm@host.com", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", response="6629fae49393a05397450978507c4ef1""#,
        gone: &["dcd98b7102dd2f0e8b11d0f600bfb0c093", "6629fae49393a05397450978507c4ef1", "Mufasa"],
        kept: &["Authorization: Digest [redacted:authorization]"],
    },
    // --- Sensitive names -------------------------------------------------------------------
    Case {
        what: "form-encoded login body",
        input: "POST /login body: username=alice&password=hunter2&remember=1",
        gone: &["hunter2"],
        kept: &["username=alice&password=[redacted:password]&remember=1"],
    },
    Case {
        what: "JSON login body",
        input: r#"{"username":"alice","password":"correct horse battery staple"}"#,
        gone: &["correct horse battery staple", "horse"],
        kept: &[r#"{"username":"alice","password":"[redacted:password]"}"#],
    },
    Case {
        what: "YAML config",
        input: "database:\n  host: db.internal\n  DB_PASSWORD: s3cr3t!Pa55\n  port: 5432",
        gone: &["s3cr3t!Pa55"],
        kept: &["host: db.internal", "DB_PASSWORD: [redacted:password]", "port: 5432"],
    },
    Case {
        what: ".env line with an AWS secret",
        input: "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nAWS_REGION=us-east-1",
        gone: &["wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
        kept: &["AWS_SECRET_ACCESS_KEY=[redacted:secret]\nAWS_REGION=us-east-1"],
    },
    Case {
        what: "OAuth token request body",
        input: "grant_type=authorization_code&code=SplxlOBeZQQYbYS6WxSbIA&client_id=s6BhdRkqt3&client_secret=GOCSPX-1a2b3c4d5e6f7g8h9i0j&code_verifier=dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        gone: &["SplxlOBeZQQYbYS6WxSbIA", "GOCSPX-1a2b3c4d5e6f7g8h9i0j", "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"],
        kept: &["grant_type=authorization_code", "client_id=s6BhdRkqt3", "client_secret=[redacted:secret]", "code_verifier=[redacted:secret]"],
    },
    Case {
        what: "Python dict repr",
        input: "payload={'user': 'bob', 'password': 'p@ssw0rd!', 'retries': 3}",
        gone: &["p@ssw0rd!"],
        kept: &["'user': 'bob'", "'password': '[redacted:password]'", "'retries': 3"],
    },
    Case {
        what: "JSON inside a JSON string (escaped quotes)",
        input: r#"{"url":"/api/login","body":"{\"email\":\"a@b.c\",\"password\":\"hunter2\",\"remember\":true}"}"#,
        gone: &["hunter2"],
        kept: &[r#"\"password\":\"[redacted:password]\""#, r#"\"remember\":true"#, r#""url":"/api/login""#],
    },
    Case {
        what: "one-time codes",
        input: r#"verify?otp=492039 then {"otp_code":"771204","totp": 123456}"#,
        gone: &["492039", "771204", "123456"],
        kept: &["verify?otp=[redacted:otp]", r#""otp_code":"[redacted:otp]""#],
    },
    Case {
        what: "MFA token and verification code",
        input: "mfa_token=Ab12Cd34Ef56 verificationCode: 558812",
        gone: &["Ab12Cd34Ef56", "558812"],
        kept: &["mfa_token=[redacted:otp]", "verificationCode: [redacted:otp]"],
    },
    Case {
        what: "SAML response in a POST body",
        input: "SAMLResponse=PHNhbWxwOlJlc3BvbnNlIHhtbG5zOnNhbWxwPSJ1cm46b2FzaXM6bmFtZXM6dGM6U0FNTDoyLjA6cHJvdG9jb2wiPjwvc2FtbHA6UmVzcG9uc2U%2B&RelayState=%2Fdashboard",
        gone: &["PHNhbWxwOlJlc3BvbnNl"],
        kept: &["SAMLResponse=[redacted:token]&RelayState=%2Fdashboard"],
    },
    Case {
        what: "SAML request in a redirect URL",
        input: "Location: https://idp.example.org/sso?SAMLRequest=fZJNT%2BMwEIb%2FSuR7Gsf9gFpNpW4rRCUWRbTsgQsyzpRaiu3gmXTbf79OWrTswuIr8z7zvCPPUdmmlcuOdv4e3jtASg62cSiHQcm64KRXaFA6ZQElabldfr%2BRYsRlGzx57Rt2Ebk%2BUYgQyHjHksV%2FSQPmdMV6ikw%2BbWb3F4c5qq8Vs5%2FlpG4DbqVm8wHzuM%2FMq%2Bhb1HUkF5Ff8ADjT2h6V0lKIO&RelayState=xyz",
        gone: &["fZJNT%2BMwEIb"],
        kept: &["https://idp.example.org/sso?SAMLRequest=[redacted:token]"],
    },
    Case {
        what: "Rails CSRF meta tag",
        input: r#"<meta name="csrf-token" content="THvrj2Jk0GrQ3mJKLf9pZ1N1jkA3rB7J5yX8Cq7YzKc8w==" />"#,
        gone: &["THvrj2Jk0GrQ3mJKLf9pZ1N1jkA3rB7J5yX8Cq7YzKc8w=="],
        kept: &[r#"<meta name="csrf-token" content="[redacted:csrf]" />"#],
    },
    Case {
        what: "Django CSRF hidden input",
        input: r#"<input type="hidden" name="csrfmiddlewaretoken" value="Kp3nXw9ZqR5tLm2YvB8cHd4Fj6Gs1Ae0">"#,
        gone: &["Kp3nXw9ZqR5tLm2YvB8cHd4Fj6Gs1Ae0"],
        kept: &[r#"name="csrfmiddlewaretoken" value="[redacted:csrf]">"#],
    },
    Case {
        what: "Laravel X-XSRF-TOKEN header",
        input: "X-XSRF-TOKEN: eyJpdiI6IkJ3dVZ3a2tLdz09IiwidmFsdWUiOiJ4In0=",
        gone: &["eyJpdiI6IkJ3dVZ3a2tLdz09IiwidmFsdWUiOiJ4In0="],
        kept: &["X-XSRF-TOKEN: [redacted:csrf]"],
    },
    Case {
        what: "ASP.NET anti-forgery field",
        input: "__RequestVerificationToken=CfDJ8Kz9xQ3vY1mN2pL4rT6wU8; Path=/",
        gone: &["CfDJ8Kz9xQ3vY1mN2pL4rT6wU8"],
        kept: &["__RequestVerificationToken=[redacted:csrf]; Path=/"],
    },
    // --- URLs ------------------------------------------------------------------------------
    Case {
        what: "OAuth authorization-code redirect",
        input: "Navigated to https://app.example.com/oauth/callback?code=4/0AX4XfWh7_abcDEF&state=xyz123abc&scope=email%20profile",
        gone: &["4/0AX4XfWh7_abcDEF", "xyz123abc"],
        kept: &["https://app.example.com/oauth/callback?code=[redacted:query-token]", "&scope=email%20profile"],
    },
    Case {
        what: "OAuth implicit grant fragment",
        input: "https://app.example.com/callback#access_token=ya29.a0ARrdaM-xyz987&token_type=Bearer&expires_in=3599",
        gone: &["ya29.a0ARrdaM-xyz987"],
        kept: &["#access_token=[redacted:token]&token_type=Bearer&expires_in=3599"],
    },
    Case {
        what: "Basic-auth URL",
        input: "Fetch failed: https://admin:S3cr3tP%40ss@internal.example.com:8443/admin/status",
        gone: &["S3cr3tP%40ss", "admin:"],
        kept: &["https://[redacted:userinfo]@internal.example.com:8443/admin/status"],
    },
    Case {
        what: "Postgres DSN",
        input: "connecting to postgres://app_user:pgP4ssw0rd@db.internal:5432/prod?sslmode=require",
        gone: &["pgP4ssw0rd", "app_user"],
        kept: &["postgres://[redacted:userinfo]@db.internal:5432/prod?sslmode=require"],
    },
    Case {
        what: "Redis URL with password only",
        input: "REDIS_URL=redis://:r3d1sP4ss@cache:6379/0",
        gone: &["r3d1sP4ss"],
        kept: &["redis://[redacted:userinfo]@cache:6379/0"],
    },
    Case {
        what: "AWS S3 presigned URL",
        input: "GET https://bucket.s3.amazonaws.com/report.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20240501%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20240501T000000Z&X-Amz-Expires=3600&X-Amz-Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024 403",
        gone: &["AKIAIOSFODNN7EXAMPLE", "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024"],
        kept: &["https://bucket.s3.amazonaws.com/report.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256", "X-Amz-Date=20240501T000000Z&X-Amz-Expires=3600", " 403"],
    },
    Case {
        what: "Google Maps API key in a script URL",
        input: "GET https://maps.googleapis.com/maps/api/js?key=AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY&callback=initMap net::ERR_BLOCKED_BY_CLIENT",
        gone: &["AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"],
        kept: &["https://maps.googleapis.com/maps/api/js?key=[redacted:query-token]&callback=initMap net::ERR_BLOCKED_BY_CLIENT"],
    },
    Case {
        what: "password reset link",
        input: "Open https://example.com/reset-password?token=6f1c0b2e-Zx9&email=ada%40example.com",
        gone: &["6f1c0b2e-Zx9"],
        kept: &["https://example.com/reset-password?token=[redacted:token]&email=ada%40example.com"],
    },
    Case {
        what: "CAS ticket and signed CloudFront URL",
        input: "https://app.example.edu/?ticket=ST-1856339-aA5Yuvrxzpv8Tau1cYQ7 and https://d111111abcdef8.cloudfront.net/img.jpg?Expires=1700000000&Signature=nitfHRCrtziwO2HwPfWw~yYDhUF5EwRunQA-j19DzZrvDh6hQ73lDx~-ar3UocvvRQVw6EkC~GdpGQyyOSKQim-TxAnW7d8F5Kkai9HVx0FIu-5jcQb0UEmatEXAMPLE&Key-Pair-Id=K2JCJMDEHXQW5F",
        gone: &["ST-1856339-aA5Yuvrxzpv8Tau1cYQ7", "nitfHRCrtziwO2HwPfWw"],
        kept: &["?ticket=[redacted:query-token]", "img.jpg?Expires=1700000000&Signature=[redacted:secret]&Key-Pair-Id=K2JCJMDEHXQW5F"],
    },
    Case {
        what: "Facebook Graph API call in a console error",
        input: "GET https://graph.facebook.com/v18.0/me?fields=id,name&access_token=EAAGm0PX4ZCpsBAKZB4s 401 (Unauthorized)",
        gone: &["EAAGm0PX4ZCpsBAKZB4s"],
        kept: &["?fields=id,name&access_token=[redacted:token] 401 (Unauthorized)"],
    },
    // --- CDP capability ids ----------------------------------------------------------------
    Case {
        what: "webSocketDebuggerUrl from /json/list",
        input: r#"   "webSocketDebuggerUrl": "ws://127.0.0.1:9222/devtools/page/8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1""#,
        gone: &[PAGE_ID],
        kept: &[r#""webSocketDebuggerUrl": "ws://127.0.0.1:9222/devtools/page/target:"#],
    },
    Case {
        what: "devtoolsFrontendUrl from /json/list",
        input: r#""devtoolsFrontendUrl": "/devtools/inspector.html?ws=127.0.0.1:9222/devtools/page/8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1","#,
        gone: &[PAGE_ID],
        kept: &["/devtools/inspector.html?ws=127.0.0.1:9222/devtools/page/target:"],
    },
    Case {
        what: "devtoolsFrontendUrlCompat",
        input: "https://chrome-devtools-frontend.appspot.com/serve_rev/@5a1b2c3d/inspector.html?ws=127.0.0.1:9222/devtools/page/8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1",
        gone: &[PAGE_ID],
        kept: &["https://chrome-devtools-frontend.appspot.com/serve_rev/@5a1b2c3d/inspector.html?ws=127.0.0.1:9222/devtools/page/target:"],
    },
    Case {
        what: "browser websocket URL from /json/version",
        input: r#"{"Browser": "Chrome/124.0.6367.60", "webSocketDebuggerUrl": "ws://localhost:9222/devtools/browser/3c8f9c3e-8a6b-4b5e-9f21-2d5b7f0e1a44"}"#,
        gone: &[BROWSER_ID],
        kept: &[r#""Browser": "Chrome/124.0.6367.60""#, "ws://localhost:9222/devtools/browser/target:"],
    },
    Case {
        what: "Chromium's own startup line",
        input: "DevTools listening on ws://127.0.0.1:35729/devtools/browser/3c8f9c3e-8a6b-4b5e-9f21-2d5b7f0e1a44",
        gone: &[BROWSER_ID],
        kept: &["DevTools listening on ws://127.0.0.1:35729/devtools/browser/target:"],
    },
    Case {
        what: "Puppeteer protocol debug log",
        input: r#"puppeteer:protocol:SEND ► [ '{"method":"Target.attachToTarget","params":{"targetId":"8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1","flatten":true},"id":5}' ]"#,
        gone: &[PAGE_ID],
        kept: &[r#"{"method":"Target.attachToTarget","params":{"targetId":"target:"#, r#""flatten":true},"id":5}"#],
    },
    Case {
        what: "flattened session id on a CDP event",
        input: r#"{"method":"Runtime.consoleAPICalled","params":{"type":"error"},"sessionId":"1F3B5D7F9A1C3E5F7A9B1D3F5A7C9E1B"}"#,
        gone: &["1F3B5D7F9A1C3E5F7A9B1D3F5A7C9E1B"],
        kept: &[r#"{"method":"Runtime.consoleAPICalled","params":{"type":"error"},"sessionId":"target:"#],
    },
    Case {
        what: "Playwright protocol log with target infos",
        input: r#"pw:protocol <RECV {"id":1,"result":{"targetInfos":[{"targetId":"F2C6A9D0B1E34F5A8C7D6E5F4A3B2C1D","type":"page","title":"Example","url":"https://example.com/","attached":false,"browserContextId":"0A1B2C3D4E5F60718293A4B5C6D7E8F9"}]}}"#,
        gone: &["F2C6A9D0B1E34F5A8C7D6E5F4A3B2C1D", "0A1B2C3D4E5F60718293A4B5C6D7E8F9"],
        kept: &[r#""type":"page","title":"Example","url":"https://example.com/","attached":false"#],
    },
    Case {
        what: "Node inspector URL",
        input: "Debugger listening on ws://127.0.0.1:9229/0f2c936f-b1cd-4ac9-aab3-f63b0f33d55e\nFor help, see: https://nodejs.org/en/docs/inspector",
        gone: &["0f2c936f-b1cd-4ac9-aab3-f63b0f33d55e"],
        kept: &["Debugger listening on ws://127.0.0.1:9229/target:", "For help, see: https://nodejs.org/en/docs/inspector"],
    },
    Case {
        what: "devtools:// frontend URL",
        input: "devtools://devtools/bundled/inspector.html?ws=127.0.0.1:9222/devtools/page/8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1",
        gone: &[PAGE_ID],
        kept: &["devtools://devtools/bundled/inspector.html?ws=127.0.0.1:9222/devtools/page/target:"],
    },
    // --- Console lines as Chromium prints them ---------------------------------------------
    Case {
        what: "unhandled rejection with a refresh token",
        input: r#"Uncaught (in promise) Error: Request failed: {"error":"invalid_grant","refresh_token":"1//0gKx9-abcDEF"}
    at refresh (https://app.example.com/static/js/auth.3f2a1c.js:12:345)"#,
        gone: &["1//0gKx9-abcDEF"],
        kept: &[r#"Uncaught (in promise) Error: Request failed: {"error":"invalid_grant","refresh_token":"[redacted:token]"}"#, "at refresh (https://app.example.com/static/js/auth.3f2a1c.js:12:345)"],
    },
    Case {
        what: "failed XHR with a token in the query",
        input: "GET https://api.example.com/v1/me?access_token=EAAGm0PX4ZCps 401 (Unauthorized)    xhr.js:210",
        gone: &["EAAGm0PX4ZCps"],
        kept: &["GET https://api.example.com/v1/me?access_token=[redacted:token] 401 (Unauthorized)    xhr.js:210"],
    },
    Case {
        what: "clean Chromium error lines stay intact",
        input: "[1105/101233.420:ERROR:ssl_client_socket_impl.cc(981)] handshake failed; returned -1, SSL error code 1, net_error -100\nFailed to load resource: net::ERR_CONNECTION_REFUSED",
        gone: &[],
        kept: &["[1105/101233.420:ERROR:ssl_client_socket_impl.cc(981)] handshake failed; returned -1, SSL error code 1, net_error -100\nFailed to load resource: net::ERR_CONNECTION_REFUSED"],
    },
    Case {
        what: "usage counters keep their values",
        input: r#"{"usage":{"inputTokens":1234,"outputTokens":56,"cache_read_input_tokens":7},"sessionCount":3,"tokenType":"Bearer","maxTokens":4096}"#,
        gone: &[],
        kept: &[r#"{"usage":{"inputTokens":1234,"outputTokens":56,"cache_read_input_tokens":7},"sessionCount":3,"tokenType":"Bearer","maxTokens":4096}"#],
    },
    // --- Private keys and well-known token formats -----------------------------------------
    Case {
        what: "RSA private key block",
        input: "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF0jqNk\nWwM1BWc8Oi8bL7kQ2CPHQnqzRGBVnB5hC+0qkYJ2w==\n-----END RSA PRIVATE KEY-----\ndone",
        gone: &["MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn", "WwM1BWc8Oi8bL7kQ2CPHQnqzRGBVnB5hC"],
        kept: &["key:\n[redacted:private-key]\ndone"],
    },
    Case {
        what: "encrypted PKCS#8 key with PEM headers",
        input: "-----BEGIN ENCRYPTED PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQww\n-----END ENCRYPTED PRIVATE KEY-----",
        gone: &["MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQww", "3F17F5316E2BAC89"],
        kept: &["[redacted:private-key]"],
    },
    Case {
        what: "service-account JSON with an escaped PEM",
        input: r#"{"type":"service_account","project_id":"demo-123","private_key":"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n","client_email":"svc@demo-123.iam.gserviceaccount.com"}"#,
        gone: &["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"],
        kept: &[r#""type":"service_account","project_id":"demo-123","private_key":"[redacted:secret]","client_email":"svc@demo-123.iam.gserviceaccount.com""#],
    },
    Case {
        what: "git error with an installation token in the remote",
        input: "fatal: Authentication failed for 'https://x-access-token:ghs_16C7e42F292c6912E7710c838347Ae178B4a@github.com/acme/repo.git/'",
        gone: &["ghs_16C7e42F292c6912E7710c838347Ae178B4a", "x-access-token"],
        kept: &["fatal: Authentication failed for 'https://[redacted:userinfo]@github.com/acme/repo.git/'"],
    },
    Case {
        what: "Slack bot token",
        input: "slack: posting with xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx failed: not_in_channel",
        gone: &["xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"],
        kept: &["slack: posting with [redacted:api-key] failed: not_in_channel"],
    },
    Case {
        what: ".npmrc auth token",
        input: "//npm.registry.test/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
        gone: &["npm_abcdefghijklmnopqrstuvwxyz0123456789"],
        kept: &["//npm.registry.test/:_authToken=[redacted:token]"],
    },
    Case {
        what: "OpenAI-style and Stripe keys in prose",
        input: "Invalid API Key provided: sk_live_4eC39HqLyjWDarjtT1zdp7dc; fallback sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD rejected",
        gone: &["sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"],
        kept: &["Invalid API Key provided: [redacted:api-key]; fallback [redacted:api-key] rejected"],
    },
    Case {
        what: "AWS access key id in an SDK error",
        input: "The AWS Access Key Id you provided does not exist in our records. (AKIAIOSFODNN7EXAMPLE)",
        gone: &["AKIAIOSFODNN7EXAMPLE"],
        kept: &["The AWS Access Key Id you provided does not exist in our records. ([redacted:api-key])"],
    },
];

#[test]
fn planted_secrets_are_gone_and_context_survives() {
    assert!(CASES.len() >= 60, "the table must keep at least 60 cases");
    let mut failures = Vec::new();
    for case in CASES {
        let s = Sanitizer::new();
        let out = s.text_capped(case.input, usize::MAX).into_string();
        for secret in case.gone {
            if out.contains(secret) {
                failures.push(format!("{}: {secret:?} survived in {out:?}", case.what));
            }
        }
        for context in case.kept {
            if !out.contains(context) {
                failures.push(format!("{}: lost {context:?}; got {out:?}", case.what));
            }
        }
        let again = s.text_capped(&out, usize::MAX).into_string();
        if again != out {
            failures.push(format!(
                "{}: not a fixed point: {out:?} -> {again:?}",
                case.what
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn capability_handles_are_stable_within_a_run_and_differ_across_runs() {
    let a = Sanitizer::new();
    let b = Sanitizer::new();
    let url = format!("ws://127.0.0.1:9222/devtools/page/{PAGE_ID}");
    let json = format!(r#"{{"targetId":"{PAGE_ID}"}}"#);
    let ha = a.handle(PAGE_ID).into_string();
    assert!(a.text(&url).as_str().ends_with(&ha));
    assert!(a.text(&json).as_str().contains(&ha));
    assert!(!b.text(&url).as_str().ends_with(&ha));
    assert_eq!(a.handle(&PAGE_ID.to_lowercase()).as_str(), ha);
}

#[test]
fn explicit_secrets_in_real_contexts() {
    let s = Sanitizer::new();
    s.register_secret("DB_PASSWORD", "Tr0ub4dor&3")
        .expect("valid name");
    s.register_secret("API_TOKEN", "tok_3f9a1c")
        .expect("valid name");
    let cases = [
        (
            "login failed for Tr0ub4dor&3",
            "login failed for ${DB_PASSWORD}",
        ),
        (
            "GET /search?q=Tr0ub4dor%263 200",
            "GET /search?q=${DB_PASSWORD} 200",
        ),
        (
            r#"{"note":"pw is Tr0ub4dor&3"}"#,
            r#"{"note":"pw is ${DB_PASSWORD}"}"#,
        ),
        (
            "Authorization: Bearer tok_3f9a1c",
            "Authorization: Bearer ${API_TOKEN}",
        ),
        ("password=Tr0ub4dor&3", "password=${DB_PASSWORD}"),
    ];
    for (input, want) in cases {
        assert_eq!(s.text(input).as_str(), want, "{input}");
    }
    let summary = s.summary();
    assert_eq!(summary.secrets.get("DB_PASSWORD"), Some(&4));
    assert_eq!(summary.secrets.get("API_TOKEN"), Some(&1));
}

#[test]
fn typed_text_echoed_back_is_masked() {
    let s = Sanitizer::new();
    let name = s.register_typed("my s3cret answer").expect("long enough");
    assert_eq!(name, "TYPED_1");
    assert_eq!(
        s.text("validation error: 'my s3cret answer' is not allowed")
            .as_str(),
        "validation error: '${TYPED_1}' is not allowed"
    );
    assert_eq!(s.register_typed("abc"), None, "too short to mask safely");
}

#[test]
fn json_walk_of_a_har_entry() {
    let s = Sanitizer::new();
    let entry = serde_json::json!({
        "request": {
            "method": "POST",
            "url": "https://api.example.com/login?next=%2Fhome&token=abc123",
            "headers": [
                {"name": "Cookie", "value": "sessionid=q7k2m9x4"},
                {"name": "Authorization", "value": "Bearer ya29.a0AfH6SMB"},
                {"name": "Content-Type", "value": "application/json"}
            ],
            "queryString": [{"name": "token", "value": "abc123"}, {"name": "next", "value": "/home"}],
            "cookies": [{"name": "sessionid", "value": "q7k2m9x4", "path": "/", "httpOnly": true}],
            "postData": {"mimeType": "application/json", "text": "{\"password\":\"hunter2\"}"},
            "bodySize": 22
        },
        "response": {"status": 401, "headers": [{"name": "Set-Cookie", "value": "sid=zz9; Secure"}]},
        "time": 87.5
    });
    let out = s.json(&entry).into_value();
    let text = out.to_string();
    for secret in ["q7k2m9x4", "ya29.a0AfH6SMB", "abc123", "hunter2", "zz9"] {
        assert!(!text.contains(secret), "{secret} survived: {text}");
    }
    assert_eq!(
        out["request"]["headers"][1]["value"],
        "Bearer [redacted:authorization]"
    );
    assert_eq!(out["request"]["headers"][2]["value"], "application/json");
    assert_eq!(out["request"]["queryString"][1]["value"], "/home");
    assert_eq!(out["request"]["cookies"][0]["path"], "/");
    assert_eq!(out["request"]["bodySize"], 22);
    assert_eq!(out["response"]["status"], 401);
    assert_eq!(out["time"], 87.5);
    assert_eq!(s.json(&out).into_value(), out, "walking twice equals once");
}
