//! A static HTTP server on 127.0.0.1 for package indexes: `python3 -m http.server` over a
//! directory, on a free port, stopped when dropped.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `python3 -m http.server`; killed on drop.
pub struct HttpServer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl HttpServer {
    /// `http://127.0.0.1:PORT/` (with the trailing slash).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory being served.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

/// Serves `dir` over HTTP on 127.0.0.1 and returns once the server accepts connections.
/// Retries on another port if the chosen one was taken in the meantime.
#[track_caller]
pub fn serve(dir: &Path) -> HttpServer {
    for _ in 0..5 {
        let port = free_port();
        let mut child = Command::new("python3")
            .args(["-m", "http.server", "--bind", "127.0.0.1", "--directory"])
            .arg(dir)
            .arg(port.to_string())
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start python3 -m http.server");
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                return HttpServer {
                    child,
                    port,
                    dir: dir.to_path_buf(),
                };
            }
            if child.try_wait().expect("poll http.server").is_some() || Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!("could not start an HTTP server for {}", dir.display());
}
