//! Recipe options: a setting one recipe declares and answers (torch's flash attention), on, off
//! or, unset, decided by the recipe's own rule. A build carries the values given, by project,
//! and nothing outside the recipe knows what an option means: a new project declares its own
//! with no edit elsewhere, and it is set with `--recipe-option PROJECT.OPTION=on|off` (or the
//! reference's flag for it, when the recipe names one).

use std::collections::BTreeMap;

use super::{Error, Recipes};
use crate::stack::Stack;
use crate::stack::source::did_you_mean;

/// A setting a recipe declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecipeOption {
    /// Its name in `--recipe-option PROJECT.NAME=…` (`flash-attention`).
    pub name: &'static str,
    /// The reference's flag for it, without dashes (`enable-pytorch-flash-attention`: its
    /// `--[no-]` pair sets the option of every project whose recipe declares it).
    pub reference_flag: Option<&'static str>,
    /// What it switches, and what unset means.
    pub about: &'static str,
}

/// The options given to one build: by project name, by option name, on or off. An option
/// absent is unset (the recipe decides).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OptionValues {
    values: BTreeMap<String, BTreeMap<&'static str, bool>>,
}

impl OptionValues {
    /// The options given to `project`.
    pub fn of(&self, project: &str) -> ProjectOptions<'_> {
        ProjectOptions {
            values: self.values.get(project),
        }
    }

    /// From the reference's flags given (`(flag, value)`; `None`: not given) and the
    /// `--recipe-option` texts, checked against the options the stack's recipes declare. A
    /// later value for the same option wins, and `--recipe-option` is applied after the flags.
    pub fn resolve(
        recipes: &Recipes,
        stack: &Stack,
        flags: &[(&str, Option<bool>)],
        given: &[String],
    ) -> Result<OptionValues, Error> {
        let mut out = OptionValues::default();
        for (flag, value) in flags {
            let Some(value) = *value else { continue };
            // A flag for a project the stack does not have sets nothing, as the reference's
            // does when its project is not built.
            for project in stack.projects.values() {
                for option in recipes.of(stack, project)?.options() {
                    if option.reference_flag == Some(*flag) {
                        out.set(&project.name, option.name, value);
                    }
                }
            }
        }
        for text in given {
            let (project, option, value) = parse(recipes, stack, text)?;
            out.set(&project, option, value);
        }
        Ok(out)
    }

    fn set(&mut self, project: &str, option: &'static str, value: bool) {
        self.values
            .entry(project.to_string())
            .or_default()
            .insert(option, value);
    }
}

/// The options given to one project.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProjectOptions<'a> {
    values: Option<&'a BTreeMap<&'static str, bool>>,
}

impl ProjectOptions<'_> {
    /// The value given to `option` (`None`: unset).
    pub fn get(&self, option: &RecipeOption) -> Option<bool> {
        self.values.and_then(|v| v.get(option.name).copied())
    }
}

/// `PROJECT.OPTION=VALUE`, each part checked: the project is the stack's, the option is its
/// recipe's, the value a boolean.
fn parse(
    recipes: &Recipes,
    stack: &Stack,
    text: &str,
) -> Result<(String, &'static str, bool), Error> {
    let usage = |message: String| Error::Option {
        given: text.to_string(),
        message,
    };
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| usage("expected PROJECT.OPTION=on|off".into()))?;
    let (project_name, option_name) = key
        .split_once('.')
        .ok_or_else(|| usage("expected PROJECT.OPTION=on|off".into()))?;
    let Some(project) = stack.projects.get(project_name) else {
        let hint = suggest(project_name, stack.projects.keys().map(String::as_str));
        return Err(usage(format!(
            "the stack has no project `{project_name}`{hint}; projects: {}",
            stack
                .projects
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let declared = recipes.of(stack, project)?.options();
    let Some(option) = declared.iter().find(|o| o.name == option_name) else {
        let names: Vec<&str> = declared.iter().map(|o| o.name).collect();
        let known = if names.is_empty() {
            format!("its recipe `{}` declares none", project.recipe)
        } else {
            format!(
                "its recipe `{}` declares {}",
                project.recipe,
                names.join(", ")
            )
        };
        let hint = suggest(option_name, names.iter().copied());
        return Err(usage(format!(
            "project '{project_name}' has no option `{option_name}`{hint}; {known}"
        )));
    };
    let value = match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => true,
        "0" | "false" | "no" | "off" => false,
        other => {
            return Err(usage(format!(
                "`{other}` is not on or off (1/0, true/false, yes/no, on/off)"
            )));
        }
    };
    Ok((project.name.clone(), option.name, value))
}

fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    did_you_mean(word, candidates)
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(flags: &[(&str, Option<bool>)], given: &[&str]) -> Result<OptionValues, Error> {
        let stack = Stack::load(None).expect("stack");
        let given: Vec<String> = given.iter().map(|s| s.to_string()).collect();
        OptionValues::resolve(&Recipes::builtin(), &stack, flags, &given)
    }

    const FLASH: &str = "enable-pytorch-flash-attention";

    fn flash(values: &OptionValues) -> Option<bool> {
        values
            .of("torch")
            .get(&super::super::torch::FLASH_ATTENTION)
    }

    #[test]
    fn the_reference_flag_and_the_generic_form_set_the_same_option() {
        assert_eq!(flash(&resolve(&[(FLASH, None)], &[]).expect("ok")), None);
        assert_eq!(
            flash(&resolve(&[(FLASH, Some(true))], &[]).expect("ok")),
            Some(true)
        );
        assert_eq!(
            flash(&resolve(&[(FLASH, Some(true))], &["torch.flash-attention=OFF"]).expect("ok")),
            Some(false)
        );
        let other = resolve(&[(FLASH, Some(true))], &[]).expect("ok");
        assert_eq!(other.of("vision").values, None);
    }

    #[test]
    fn bad_options_are_named() {
        let messages: Vec<String> = [
            "torch.flash-attention",
            "torch=on",
            "torhc.flash-attention=on",
            "torch.flash-atention=on",
            "vision.flash-attention=on",
            "torch.flash-attention=maybe",
        ]
        .iter()
        .map(|given| resolve(&[], &[given]).expect_err("refused").to_string())
        .collect();
        assert_eq!(
            messages,
            [
                "--recipe-option torch.flash-attention: expected PROJECT.OPTION=on|off",
                "--recipe-option torch=on: expected PROJECT.OPTION=on|off",
                "--recipe-option torhc.flash-attention=on: the stack has no project `torhc` (did you mean `torch`?); projects: torch, audio, vision, triton, apex",
                "--recipe-option torch.flash-atention=on: project 'torch' has no option `flash-atention` (did you mean `flash-attention`?); its recipe `torch` declares flash-attention",
                "--recipe-option vision.flash-attention=on: project 'vision' has no option `flash-attention`; its recipe `vision` declares none",
                "--recipe-option torch.flash-attention=maybe: `maybe` is not on or off (1/0, true/false, yes/no, on/off)",
            ]
        );
    }
}
